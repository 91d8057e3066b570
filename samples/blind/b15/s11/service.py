"""Runs the re-ranking API under gunicorn (gthread workers); stops after SVC_LIFETIME."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
PORT = os.environ.get("SVC_PORT", "18811")
WORKERS = os.environ.get("SVC_WORKERS", "1")
THREADS = os.environ.get("SVC_THREADS", "8")

web = subprocess.Popen([sys.executable, "-m", "gunicorn", "-k", "gthread", "-w", WORKERS, "--threads", THREADS,
                        "-b", f"127.0.0.1:{PORT}", "--log-level", "warning", "app:app"], cwd=HERE)
try:
    web.wait(timeout=LIFETIME)
except subprocess.TimeoutExpired:
    web.terminate()
    try:
        web.wait(timeout=5)
    except subprocess.TimeoutExpired:
        web.kill()
