"""Candidate re-ranking API served by gunicorn (gthread workers); user vectors come from a local cache child."""
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

PORT = int(os.environ.get("SVC_PORT", "18803"))
CACHE_PORT = int(os.environ.get("SVC_CACHE_PORT", "18804"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
PER_THREAD = os.environ.get("SVC_PER_THREAD_CONN", "0") == "1"
DIM = 32

rng = np.random.default_rng(1)
ITEMS = rng.standard_normal((5000, DIM)).astype(np.float32)


class CacheClient:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", CACHE_PORT))
        self.rfile = self.sock.makefile("rb")

    def get(self, key):
        self.sock.sendall(f"GET {key}\n".encode())
        return np.array(self.rfile.readline().split(), dtype=np.float32)


_shared = {}
_client_guard = threading.Lock()
_local = threading.local()


def user_vector(user):
    if PER_THREAD:
        c = getattr(_local, "client", None)
        if c is None:
            c = _local.client = CacheClient()
        return c.get(user)
    with _client_guard:
        c = _shared.get("client")
        if c is None:
            c = _shared["client"] = CacheClient()
        return c.get(user)


app = Flask(__name__)


@app.post("/rerank")
def rerank():
    body = request.get_json()
    u = user_vector(body["user"])
    ids = np.asarray(body["candidates"], dtype=np.int64) % len(ITEMS)
    scores = ITEMS[ids] @ u
    order = np.argsort(-scores)[:10]
    return jsonify({"top": ids[order].tolist()})


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
    cache = subprocess.Popen([sys.executable, os.path.join(here, "cache.py"), str(CACHE_PORT)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", CACHE_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    App(app, {"bind": f"127.0.0.1:{PORT}", "workers": 1, "worker_class": "gthread", "threads": 8,
              "loglevel": "warning", "when_ready": when_ready, "graceful_timeout": 3}).run()
    cache.terminate()
