import os
import queue
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18721"))
CACHE_PORT = int(os.environ.get("SVC_CACHE_PORT", "18722"))
POOL = int(os.environ.get("SVC_CACHE_CONNS", "1"))
DIM = 64
N_ITEMS = 20000


class CacheConn:
    def __init__(self):
        for _ in range(100):
            try:
                self.sock = socket.create_connection(("127.0.0.1", CACHE_PORT))
                break
            except OSError:
                time.sleep(0.1)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rwb")

    def get(self, key):
        self.f.write(f"GET {key}\n".encode())
        self.f.flush()
        return np.array(self.f.readline().split(b","), dtype=np.float32)


class FeatureClient:
    def __init__(self, size):
        self.size = size
        self._mu = threading.Lock()
        self._conns = queue.Queue()
        self._made = 0

    def _take(self):
        try:
            return self._conns.get_nowait()
        except queue.Empty:
            pass
        with self._mu:
            if self._made < self.size:
                self._made += 1
                return CacheConn()
        return self._conns.get()

    def user_vector(self, uid):
        if self.size == 1:
            with self._mu:
                if self._made == 0:
                    self._shared = CacheConn()
                    self._made = 1
                return self._shared.get(uid)
        c = self._take()
        try:
            return c.get(uid)
        finally:
            self._conns.put(c)


rng = np.random.default_rng(0)
ITEMS = rng.standard_normal((N_ITEMS, DIM)).astype(np.float32)
features = None
app = Flask(__name__)


@app.post("/recommend")
def recommend():
    global features
    if features is None:
        features = FeatureClient(POOL)
    body = request.get_json()
    cand = np.asarray(body["items"], dtype=np.int64) % N_ITEMS
    ctx = np.asarray(body["context"], dtype=np.float32)
    u = features.user_vector(body["user"])
    s = ITEMS[cand] @ (u + 0.1 * ctx)
    top = np.argsort(-s)[:5]
    return jsonify({"user": body["user"], "items": [int(cand[i]) for i in top],
                    "scores": [round(float(s[i]), 4) for i in top]})


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


if __name__ == "__main__":
    env = dict(os.environ, CACHE_PORT=str(CACHE_PORT))
    subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cache_server.py")],
                     env=env)
    Server().run()
