"""Recommendation scoring API (gunicorn sync workers) backed by a local feature store child."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18810"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18811"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
W = np.linspace(-1, 1, 16).astype(np.float32)

app = Flask(__name__)
_conn = {}


def store_get(key):
    s = _conn.get("s")
    if s is None:
        s = socket.create_connection(("127.0.0.1", STORE_PORT))
        _conn["s"] = s
        _conn["f"] = s.makefile("rb")
    s.sendall(f"GET {key}\n".encode())
    return np.array(_conn["f"].readline().split(), dtype=np.float32)


@app.get("/score/<user>")
def score(user):
    feats = store_get(user)
    return jsonify({"user": user, "score": float(feats @ W)})


class App(BaseApplication):
    def __init__(self, application, options):
        self.application = application
        self.options = options
        super().__init__()

    def load_config(self):
        for k, v in self.options.items():
            self.cfg.set(k, v)

    def load(self):
        return self.application


def when_ready(server):
    def stop():
        time.sleep(LIFETIME)
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=stop, daemon=True).start()


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    store = subprocess.Popen([sys.executable, os.path.join(here, "store.py"), str(STORE_PORT)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    App(app, {"bind": f"127.0.0.1:{PORT}", "workers": 4, "worker_class": "sync",
              "loglevel": "warning", "when_ready": when_ready, "graceful_timeout": 3}).run()
    store.terminate()
