"""Related-items API: scores the catalogue against a query embedding and returns the best matches."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18856"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
PARTIAL_TOPK = os.environ.get("SVC_PARTIAL_TOPK", "0") == "1"
N_ITEMS, DIM = 200_000, 32

rng = np.random.default_rng(2)
CATALOGUE = rng.standard_normal((N_ITEMS, DIM), dtype=np.float32)
pool = ThreadPoolExecutor(max_workers=4)
app = FastAPI()


def top_items(q, k):
    scores = CATALOGUE @ q
    if PARTIAL_TOPK:
        part = np.argpartition(-scores, k)[:k]
        best = part[np.argsort(-scores[part])]
    else:
        best = np.argsort(-scores)[:k]
    return best.tolist(), scores[best].tolist()


class Req(BaseModel):
    vector: list[float]
    k: int = 20


@app.post("/related")
async def related(req: Req):
    loop = asyncio.get_running_loop()
    q = np.asarray(req.vector, dtype=np.float32)
    ids, scores = await loop.run_in_executor(pool, top_items, q, req.k)
    return {"ids": ids, "scores": [round(s, 4) for s in scores]}


@app.get("/health")
async def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    top_items(np.ones(DIM, np.float32), 20)
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
