"""Recommendation scoring API: fetches user features from the local feature store, scores with a linear model."""
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI

PORT = int(os.environ.get("SVC_PORT", "18804"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18854"))
STORE_DELAY_MS = float(os.environ.get("SVC_STORE_DELAY_MS", "8"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CONN_MODE = os.environ.get("SVC_STORE_CONN", "shared")
HERE = os.path.dirname(os.path.abspath(__file__))


class StoreConnection:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", STORE_PORT))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")

    def get(self, key):
        self.sock.sendall(f"GET {key}\n".encode())
        return json.loads(self.rfile.readline())["f"]


class FeatureClient:
    """Client for the feature store; one connection shared by the process, or one per thread."""

    def __init__(self, mode):
        self.mode = mode
        self._lock = threading.Lock()
        self._local = threading.local()
        self._conn = StoreConnection() if mode == "shared" else None

    def get(self, key):
        if self.mode == "shared":
            with self._lock:
                return self._conn.get(key)
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = StoreConnection()
        return conn.get(key)


rng = np.random.default_rng(0)
WEIGHTS = rng.normal(size=(32, 16)).astype(np.float32)
ITEMS = rng.normal(size=(200, 16)).astype(np.float32)

store_proc = subprocess.Popen([sys.executable, os.path.join(HERE, "feature_store.py"), str(STORE_PORT),
                               str(STORE_DELAY_MS), str(LIFETIME + 10)])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", STORE_PORT)).close()
        break
    except OSError:
        time.sleep(0.1)

features = FeatureClient(CONN_MODE)
pool = ThreadPoolExecutor(max_workers=16)
app = FastAPI()


def score_user(user_id):
    f = np.asarray(features.get(f"user:{user_id}"), dtype=np.float32)
    s = ITEMS @ (f @ WEIGHTS)
    return np.argsort(-s)[:5].tolist()


@app.get("/recommend/{user_id}")
async def recommend(user_id: int):
    loop = asyncio.get_running_loop()
    items = await loop.run_in_executor(pool, score_user, user_id)
    return {"user": user_id, "items": items}


def _stop_later():
    time.sleep(LIFETIME)
    store_proc.terminate()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop_later, daemon=True).start()
    try:
        uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
    finally:
        store_proc.terminate()
