"""Recommendation scoring API (FastAPI async): fetches user features from the local feature store, scores items."""
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import json

import numpy as np
import uvicorn
from fastapi import FastAPI

PORT = int(os.environ.get("SVC_PORT", "18804"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18824"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

rng = np.random.default_rng(11)
ITEM_EMB = rng.standard_normal((200, 32)).astype(np.float32)

_local = threading.local()


def store_conn():
    c = getattr(_local, "conn", None)
    if c is None:
        s = socket.create_connection(("127.0.0.1", STORE_PORT))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = _local.conn = (s, s.makefile("rb"))
    return c


def fetch_features(user_id):
    s, f = store_conn()
    s.sendall(f"GET {user_id}\n".encode())
    return json.loads(f.readline())


app = FastAPI()


@app.get("/recommend/{user_id}")
async def recommend(user_id: int):
    loop = asyncio.get_running_loop()
    feats = await loop.run_in_executor(None, fetch_features, user_id)
    u = np.asarray(feats, dtype=np.float32)
    scores = ITEM_EMB @ u
    top = np.argsort(-scores)[:10]
    return {"user": user_id, "items": top.tolist()}


def main():
    store = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "featurestore.py"),
                              str(STORE_PORT)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning"))
    threading.Timer(LIFETIME, lambda: setattr(server, "should_exit", True)).start()
    try:
        server.run()
    finally:
        store.terminate()


if __name__ == "__main__":
    main()
