"""Inference service."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

HERE = os.path.dirname(os.path.abspath(__file__))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18170"))
STORE_MS = os.environ.get("SVC_STORE_MS", "40")
TIMEOUT = float(os.environ.get("SVC_TIMEOUT", "2.0"))
DIM = 64

rng = np.random.default_rng(0)
W1 = rng.standard_normal((DIM * 2, 64)).astype(np.float32) * 0.1
W2 = rng.standard_normal((64, 1)).astype(np.float32) * 0.1

_local = threading.local()


class StoreClient:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.sock.settimeout(TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _readline(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("store closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def get(self, key):
        self.sock.sendall(f"GET {key}\n".encode())
        return self._readline().decode()

    def set(self, key, value):
        self.sock.sendall(f"SET {key} {value}\n".encode())
        return self._readline()


def client():
    c = getattr(_local, "c", None)
    if c is None:
        c = _local.c = StoreClient(STORE_PORT)
    return c


app = FastAPI()


class Req(BaseModel):
    user: int
    item: list[float]


@app.get("/health")
def health():
    return {"ok": True}


@app.post("/score")
def score(req: Req):
    raw = client().get(f"user:{req.user % 1000}")
    u = np.asarray(json.loads(raw) if raw else np.zeros(DIM), dtype=np.float32)
    x = np.concatenate([u, np.asarray(req.item, dtype=np.float32)])
    h = np.maximum(x @ W1, 0)
    return {"score": float(1 / (1 + np.exp(-(h @ W2)[0])))}


def start_store():
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "store.py"), "--port", str(STORE_PORT),
                             "--delay-ms", STORE_MS, "--users", "1000", "--dim", str(DIM)])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("store did not start")


if __name__ == "__main__":
    import argparse
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=18140)
    a = ap.parse_args()
    start_store()
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning", access_log=False)
