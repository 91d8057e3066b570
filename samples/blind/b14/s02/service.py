"""Recommendation scorer: fetches user features from the local store and ranks candidate items."""
import asyncio
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI

PORT = 18802
STORE_PORT = 18852
POOL_SIZE = int(os.environ.get("SVC_STORE_CONNECTIONS", "1"))
VEC_BYTES = 64 * 4


class StoreClient:
    """Small client for the feature store with a fixed set of connections."""

    def __init__(self, port, size):
        self._conns = queue.Queue()
        for _ in range(size):
            self._conns.put(self._connect(port))
        self._single = size == 1
        self._lock = threading.Lock()
        self._conn = self._conns.queue[0] if self._single else None

    @staticmethod
    def _connect(port):
        for _ in range(100):
            try:
                s = socket.create_connection(("127.0.0.1", port))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return s
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("feature store not reachable")

    @staticmethod
    def _roundtrip(conn, uid):
        conn.sendall(f"GET {uid}\n".encode())
        buf = b""
        while len(buf) < VEC_BYTES:
            chunk = conn.recv(VEC_BYTES - len(buf))
            if not chunk:
                raise ConnectionError("store closed")
            buf += chunk
        return np.frombuffer(buf, dtype=np.float32)

    def get(self, uid):
        if self._single:
            with self._lock:
                return self._roundtrip(self._conn, uid)
        conn = self._conns.get()
        try:
            return self._roundtrip(conn, uid)
        finally:
            self._conns.put(conn)


rng = np.random.default_rng(11)
ITEMS = rng.standard_normal((2000, 64)).astype(np.float32)
store = None
executor = ThreadPoolExecutor(max_workers=16)
app = FastAPI()


def rank(uid: int, k: int = 10):
    user = store.get(uid)
    scores = ITEMS @ user
    top = np.argpartition(-scores, k)[:k]
    top = top[np.argsort(-scores[top])]
    return top.tolist()


@app.get("/recommend")
async def recommend(user: int = 0):
    loop = asyncio.get_running_loop()
    items = await loop.run_in_executor(executor, rank, user)
    return {"user": user, "items": items}


if __name__ == "__main__":
    child = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__) or ".", "store.py"), str(STORE_PORT)])
    store = StoreClient(STORE_PORT, POOL_SIZE)
    try:
        uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
    finally:
        child.terminate()
