"""Launcher: runs gunicorn for app:app for SVC_LIFETIME seconds."""
import os
import signal
import subprocess
import sys
import time

life = float(os.environ.get("SVC_LIFETIME", "300"))
p = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "gunicorn"), "-c", "gunicorn.conf.py", "app:app"])
signal.signal(signal.SIGTERM, lambda *_: (p.terminate(), p.wait(), sys.exit(0)))
try:
    p.wait(timeout=life)
except subprocess.TimeoutExpired:
    p.terminate()
    p.wait()
