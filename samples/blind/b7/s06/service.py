"""Nearest-neighbour recall API: FastAPI async handlers, brute-force scoring on a thread pool."""
import asyncio
import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18561"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
DTYPE = np.dtype(os.environ.get("SVC_INDEX_DTYPE", "float64"))
N_ITEMS, DIM = 120_000, 256

rng = np.random.default_rng(0)
index = np.empty((N_ITEMS, DIM), dtype=DTYPE, order="F")
for s in range(0, N_ITEMS, 10_000):
    block = rng.standard_normal((10_000, DIM), dtype=np.float32)
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    index[s:s + 10_000] = block
item_ids = np.arange(N_ITEMS) + 1_000_000

pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="scorer")
app = FastAPI()
served = [0]
t0 = time.time()


class Query(BaseModel):
    vector: list[float]
    k: int = 10


def score(vec: np.ndarray, k: int):
    s = index @ vec.astype(DTYPE, copy=False)
    top = np.argpartition(s, -k)[-k:]
    top = top[np.argsort(-s[top])]
    return item_ids[top].tolist(), s[top].astype(float).round(4).tolist()


@app.post("/recall")
async def recall(q: Query):
    vec = np.asarray(q.vector, dtype=np.float32)
    vec /= np.linalg.norm(vec) + 1e-9
    ids, scores = await asyncio.get_running_loop().run_in_executor(pool, score, vec, q.k)
    served[0] += 1
    return {"ids": ids, "scores": scores}


def _exit(*_):
    print(json.dumps({"served": served[0], "uptime_s": round(time.time() - t0, 1)}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    threading.Timer(LIFETIME, _exit).start()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False))
    server.install_signal_handlers = lambda: None
    signal.signal(signal.SIGTERM, _exit)
    server.run()
