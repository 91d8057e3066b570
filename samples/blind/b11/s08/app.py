"""Session ranking API: pads a user's event history into a fixed-size batch and projects it."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import threading

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

MAX_ROWS = 8192
DIM = 2048
REUSE = os.environ.get("SVC_BUFFERS", "fresh") == "reuse"

rng = np.random.default_rng(0)
events = rng.standard_normal((50000, DIM // 8)).astype(np.float32)
W = rng.standard_normal((DIM, 64)).astype(np.float32) / 45
_local = threading.local()

app = FastAPI()


class History(BaseModel):
    events: list[int]


def batch_buffer():
    if not REUSE:
        return np.full((MAX_ROWS, DIM), 0.0, np.float32)
    if not hasattr(_local, "buf"):
        _local.buf = np.zeros((MAX_ROWS, DIM), np.float32)
    return _local.buf


@app.post("/rank")
def rank(h: History):
    ids = np.asarray(h.events[:MAX_ROWS]) % len(events)
    n = len(ids)
    buf = batch_buffer()
    rows = events[ids]
    for j in range(8):
        buf[:n, j * (DIM // 8):(j + 1) * (DIM // 8)] = rows * (j + 1)
    z = np.tanh(buf[:n] @ W)
    return {"score": float(z.mean()), "n": n}
