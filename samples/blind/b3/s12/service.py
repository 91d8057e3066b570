"""Inference service."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

FANOUT = int(os.environ.get("SVC_FANOUT", "32"))
ITEMS = 50_000
DIM = 128

rng = np.random.default_rng(0)
ITEM_EMB = rng.standard_normal((ITEMS, DIM), dtype=np.float32)
W1 = rng.standard_normal((2 * DIM, 256), dtype=np.float32) * 0.05
W2 = rng.standard_normal((256, 1), dtype=np.float32) * 0.05
pool = ThreadPoolExecutor(max_workers=32)

app = FastAPI()


class Req(BaseModel):
    user: list[float]
    candidates: list[int]


def score_block(u, ids):
    x = ITEM_EMB[ids]
    h = np.maximum(np.concatenate([np.broadcast_to(u, x.shape), x], axis=1) @ W1, 0)
    return (h @ W2)[:, 0]


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/rank")
async def rank(req: Req):
    loop = asyncio.get_running_loop()
    u = np.asarray(req.user, dtype=np.float32)
    ids = np.asarray(req.candidates, dtype=np.int64)
    blocks = np.array_split(ids, FANOUT)
    parts = await asyncio.gather(*(loop.run_in_executor(pool, score_block, u, b) for b in blocks))
    scores = np.concatenate(parts)
    top = np.argsort(-scores)[:10]
    return {"items": ids[top].tolist(), "scores": scores[top].round(4).tolist()}


if __name__ == "__main__":
    import argparse
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=18142)
    a = ap.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning", access_log=False)
