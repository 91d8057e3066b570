"""Ranking worker: client threads score items using features from the local store."""
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18803"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
SHARED_CONN = os.environ.get("SVC_STORE_CONNS", "shared") == "shared"
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")

here = os.path.dirname(os.path.abspath(__file__))
store = subprocess.Popen([sys.executable, os.path.join(here, "store.py"), str(STORE_PORT)])


class StoreClient:
    def __init__(self):
        for _ in range(100):
            try:
                self.sock = socket.create_connection(("127.0.0.1", STORE_PORT))
                break
            except OSError:
                time.sleep(0.1)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            self.sock.sendall(f"GET {key}\n".encode())
            line = self.f.readline()
        return np.array([float(v) for v in line.split()], dtype=np.float32)


_local = threading.local()
_shared = None


def client():
    global _shared
    if SHARED_CONN:
        return _shared
    if not hasattr(_local, "c"):
        _local.c = StoreClient()
    return _local.c


rng = np.random.default_rng(0)
W = rng.standard_normal((32, 16)).astype(np.float32)
v = rng.standard_normal(16).astype(np.float32)
deadline = time.time() + LIFETIME
out = open(STATS, "a", buffering=1 << 16)
out_lock = threading.Lock()


def score(key):
    feats = client().get(key)
    return float(np.tanh(feats @ W) @ v)


def loop(i):
    r = np.random.default_rng(i)
    last = time.time()
    while time.time() < deadline:
        t = time.time()
        score(int(r.integers(1_000_000)))
        e = time.time()
        with out_lock:
            out.write(f"{e:.4f} {(e - t) * 1000:.3f} ok\n")
            if e - last > 0.3:
                out.flush()
                last = e


if __name__ == "__main__":
    _shared = StoreClient()
    if READY:
        open(READY, "w").close()
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        list(pool.map(loop, range(CLIENTS)))
    out.flush()
    store.terminate()
    store.wait()
