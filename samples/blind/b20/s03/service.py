"""Query ranking API: looks up the query embedding in the embedding server and ranks documents."""
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18853"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18854"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
PER_THREAD = os.environ.get("SVC_CONN_PER_THREAD", "0") == "1"
DIM = 32

rng = np.random.default_rng(1)
DOCS = rng.standard_normal((3000, DIM)).astype(np.float32)


class StoreClient:
    def __init__(self, port):
        self.port = port
        self.sock = None
        self.lock = threading.Lock()

    def _connect(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s, s.makefile("rb")

    def get(self, key):
        with self.lock:
            if self.sock is None:
                self.sock = self._connect()
            s, f = self.sock
            s.sendall(key.encode() + b"\n")
            buf = f.read(DIM * 4)
            return np.frombuffer(buf, dtype="<f4")


_local = threading.local()
_shared = StoreClient(STORE_PORT)


def client():
    if not PER_THREAD:
        return _shared
    c = getattr(_local, "client", None)
    if c is None:
        c = _local.client = StoreClient(STORE_PORT)
    return c


app = Flask(__name__)


@app.post("/rank")
def rank():
    body = request.get_json()
    q = client().get(body["query"])
    scores = DOCS @ q
    top = np.argpartition(-scores, 5)[:5]
    return jsonify({"docs": top.tolist()})


@app.get("/health")
def health():
    return {"ok": True}


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 1)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", 8)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return app


def _expire(pid):
    time.sleep(LIFETIME)
    os.kill(pid, 15)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    store = subprocess.Popen([sys.executable, os.path.join(here, "vecstore.py"), str(STORE_PORT)])
    time.sleep(0.5)
    threading.Thread(target=_expire, args=(os.getpid(),), daemon=True).start()
    try:
        Server().run()
    finally:
        store.terminate()
