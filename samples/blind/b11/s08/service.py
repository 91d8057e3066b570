"""Run the session ranking API with two uvicorn worker processes for the configured lifetime."""
import os
import subprocess
import sys

port = os.environ.get("SVC_PORT", "18808")
lifetime = float(os.environ.get("SVC_LIFETIME", "60"))
here = os.path.dirname(os.path.abspath(__file__))
proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port", port,
                         "--workers", "2", "--log-level", "warning"], cwd=here)
try:
    proc.wait(timeout=lifetime)
except subprocess.TimeoutExpired:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
