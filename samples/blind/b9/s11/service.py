import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI, Request

PORT = int(os.environ.get("SVC_PORT", "18704"))
N = int(os.environ.get("SVC_CANDIDATES", "60000"))
DIM = 128
K = 10

rng = np.random.default_rng(4)
CANDS = rng.standard_normal((N, DIM), dtype=np.float32)
CANDS /= np.linalg.norm(CANDS, axis=1, keepdims=True)
pool = ThreadPoolExecutor(2)
app = FastAPI()


def retrieve(q):
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    sims = q @ CANDS.T
    idx = np.argpartition(-sims, K, axis=1)[:, :K]
    top = np.take_along_axis(sims, idx, 1)
    order = np.argsort(-top, axis=1)
    return np.take_along_axis(idx, order, 1), np.take_along_axis(top, order, 1)


@app.post("/neighbors")
async def neighbors(req: Request):
    body = await req.json()
    q = np.asarray(body["queries"], dtype=np.float32)
    ids, scores = await asyncio.get_running_loop().run_in_executor(pool, retrieve, q)
    return {"ids": ids.tolist(), "best": scores[:, 0].round(4).tolist()}


@app.get("/health")
async def health():
    return {"ok": True}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
