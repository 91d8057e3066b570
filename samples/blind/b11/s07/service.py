"""Start the candidate scoring API under gunicorn (gthread workers) for the configured lifetime."""
import os
import subprocess
import sys
import time

port = os.environ.get("SVC_PORT", "18807")
lifetime = float(os.environ.get("SVC_LIFETIME", "60"))
here = os.path.dirname(os.path.abspath(__file__))
proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "app:app", "-b", f"127.0.0.1:{port}",
                         "-k", "gthread", "-w", "2", "--threads", "4", "--log-level", "warning",
                         "--graceful-timeout", "2"], cwd=here)
try:
    proc.wait(timeout=lifetime)
except subprocess.TimeoutExpired:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
