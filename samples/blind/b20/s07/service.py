"""Nearest-neighbour search API over an in-memory embedding index (1M x 64 float32 per worker)."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import signal
import threading
import time

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18857"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
NPROBE = int(os.environ.get("SVC_NPROBE", "0"))  # 0 = scan all partitions
N, DIM, NLIST = 1_000_000, 64, 16


class Index:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        data = rng.standard_normal((N, DIM), dtype=np.float32)
        self.centroids = rng.standard_normal((NLIST, DIM), dtype=np.float32)
        assign = np.empty(N, dtype=np.int64)
        for s in range(0, N, 100_000):
            assign[s:s + 100_000] = np.argmax(data[s:s + 100_000] @ self.centroids.T, axis=1)
        order = np.argsort(assign, kind="stable")
        self.data = data[order]
        self.ids = order
        del data
        counts = np.bincount(assign, minlength=NLIST)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])

    def search(self, q, k):
        if NPROBE <= 0 or NPROBE >= NLIST:
            ranges = [(0, N)]
        else:
            lists = np.argsort(-(self.centroids @ q))[:NPROBE]
            ranges = [(self.offsets[c], self.offsets[c + 1]) for c in sorted(lists)]
        best_s, best_i = [], []
        for a, b in ranges:
            s = self.data[a:b] @ q
            top = np.argpartition(-s, k)[:k]
            best_s.append(s[top])
            best_i.append(top + a)
        s = np.concatenate(best_s)
        i = np.concatenate(best_i)
        order = np.argsort(-s)[:k]
        return self.ids[i[order]].tolist(), s[order].tolist()


index = Index()
app = FastAPI()


class Query(BaseModel):
    vector: list[float]
    k: int = 10


@app.post("/search")
async def search(req: Query):
    q = np.asarray(req.vector, dtype=np.float32)
    ids, scores = index.search(q, req.k)
    return {"ids": ids, "scores": [round(s, 4) for s in scores]}


@app.get("/health")
async def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")
