"""Ranking service."""
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request

CACHE_PORT = int(os.environ.get("SVC_CACHE_PORT", "18252"))
POOL = os.environ.get("SVC_CACHE_POOL", "shared")

_here = os.path.dirname(os.path.abspath(__file__))
_cache_proc = subprocess.Popen([sys.executable, os.path.join(_here, "featcache.py"), str(CACHE_PORT),
                                os.environ.get("SVC_CACHE_DELAY_MS", "4")])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", CACHE_PORT), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.1)


class CacheClient:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", CACHE_PORT))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rf = self.sock.makefile("rb")
        self.mu = threading.Lock()

    def get(self, key):
        with self.mu:
            self.sock.sendall(b"GET " + key.encode() + b"\n")
            line = self.rf.readline()
        return np.array([float(x) for x in line.split(b",")], dtype=np.float32)


_shared = None
_local = threading.local()


def client():
    global _shared
    if POOL == "shared":
        if _shared is None:
            _shared = CacheClient()
        return _shared
    c = getattr(_local, "c", None)
    if c is None:
        c = _local.c = CacheClient()
    return c


class Ranker:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.w1 = rng.standard_normal((96, 64)).astype(np.float32)
        self.w2 = rng.standard_normal((64, 1)).astype(np.float32)

    def score(self, feats):
        h = np.maximum(feats @ self.w1, 0)
        return (h @ self.w2).ravel()


ranker = Ranker()
app = Flask(__name__)


@app.get("/health")
def health():
    return "ok"


@app.post("/rank")
def rank():
    body = request.get_json()
    c = client()
    user = c.get("u:" + body["user"])
    ctx = c.get("c:" + body["context"])
    items = c.get("i:" + ",".join(body["items"]))
    rows = np.stack([np.concatenate([user, ctx, np.roll(items, k)]) for k in range(len(body["items"]))])
    s = ranker.score(rows)
    order = np.argsort(-s)
    return jsonify({"ranked": [body["items"][i] for i in order]})
