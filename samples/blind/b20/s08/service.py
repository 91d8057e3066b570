"""Recommendation scoring API: fetches user features from the feature store and scores candidates."""
import asyncio
import os
import subprocess
import sys
import threading
import time

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18858"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18859"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
POOL_SIZE = 16
DIM = 64

rng = np.random.default_rng(3)
ITEMS = rng.standard_normal((2000, DIM)).astype(np.float32)
W = rng.standard_normal((DIM, DIM)).astype(np.float32) / 8.0

app = FastAPI()
_pool: asyncio.Queue | None = None


async def get_conn():
    global _pool
    if _pool is None:
        _pool = asyncio.Queue()
        for _ in range(POOL_SIZE):
            _pool.put_nowait(None)
    conn = await _pool.get()
    if conn is None:
        conn = await asyncio.open_connection("127.0.0.1", STORE_PORT)
    return conn


async def fetch_features(user_id: str):
    conn = await get_conn()
    reader, writer = conn
    try:
        writer.write(f"GET {user_id}\n".encode())
        await writer.drain()
        line = await reader.readline()
    except Exception:
        writer.close()
        _pool.put_nowait(None)
        raise
    _pool.put_nowait(conn)
    return np.array(line.decode().split(","), dtype=np.float32)


class Req(BaseModel):
    user_id: str
    k: int = 10


@app.post("/recommend")
async def recommend(req: Req):
    feats = await fetch_features(req.user_id)
    q = np.tanh(feats @ W)
    scores = ITEMS @ q
    top = np.argpartition(-scores, req.k)[: req.k]
    top = top[np.argsort(-scores[top])]
    return {"user": req.user_id, "items": top.tolist()}


@app.get("/health")
async def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    store = subprocess.Popen([sys.executable, os.path.join(here, "store.py"), str(STORE_PORT)])
    time.sleep(1.0)
    threading.Thread(target=_expire, daemon=True).start()
    try:
        uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
    finally:
        store.terminate()
