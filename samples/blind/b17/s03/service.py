"""Recommendation API: FastAPI (async) fetching user features from a local store, scoring with NumPy."""
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18803"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18893"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

rng = np.random.default_rng(3)
ITEMS = rng.standard_normal((2000, 32)).astype(np.float32)
pool = ThreadPoolExecutor(max_workers=16)
app = FastAPI()


class Query(BaseModel):
    user: str
    k: int = 10


def fetch_features(user):
    with urllib.request.urlopen(f"http://127.0.0.1:{STORE_PORT}/features/{user}", timeout=10) as r:
        return json.loads(r.read())["f"]


@app.post("/recommend")
async def recommend(q: Query):
    loop = asyncio.get_running_loop()
    feats = await loop.run_in_executor(pool, fetch_features, q.user)
    u = np.asarray(feats, dtype=np.float32)
    scores = ITEMS @ u
    top = np.argpartition(-scores, q.k)[: q.k]
    return {"user": q.user, "items": top.tolist()}


def start_store():
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "feature_store.py"),
                             str(STORE_PORT)])
    import socket
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc


if __name__ == "__main__":
    store = start_store()
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    try:
        uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
    finally:
        store.terminate()
