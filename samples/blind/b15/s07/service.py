"""Starts the feature store and the gunicorn-served churn API; stops both after SVC_LIFETIME."""
import os
import subprocess
import sys
import time

PY = sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
PORT = os.environ.get("SVC_PORT", "18807")

store = subprocess.Popen([PY, os.path.join(HERE, "store.py")], cwd=HERE)
time.sleep(0.5)
web = subprocess.Popen([PY, "-m", "gunicorn", "-w", "4", "-k", "sync", "-b", f"127.0.0.1:{PORT}",
                        "--log-level", "warning", "app:app"], cwd=HERE)
try:
    web.wait(timeout=LIFETIME)
except subprocess.TimeoutExpired:
    pass
for p in (web, store):
    p.terminate()
for p in (web, store):
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
