"""Run the intent API under gunicorn (sync workers) next to the catalogue re-index job."""
import os
import subprocess
import sys
import time

port = os.environ.get("SVC_PORT", "18812")
lifetime = float(os.environ.get("SVC_LIFETIME", "60"))
here = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
reindex = subprocess.Popen([sys.executable, os.path.join(here, "reindex.py"), str(lifetime), str(os.getpid())],
                           env=env, start_new_session=True, stdin=subprocess.DEVNULL)
proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "app:app", "-b", f"127.0.0.1:{port}",
                         "-k", "sync", "-w", "2", "--log-level", "warning", "--graceful-timeout", "2"], cwd=here)
try:
    proc.wait(timeout=lifetime)
except subprocess.TimeoutExpired:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
reindex.wait(timeout=10)
