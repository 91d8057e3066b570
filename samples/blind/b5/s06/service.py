"""Audio-clip embedding service: FastAPI (sync def); pads clip frames into a fixed-length batch,
normalizes and projects with NumPy.

Env:
  SVC_PORT        listen port (default 18306)
  SVC_MAX_FRAMES  padded length (default 8192)
  SVC_REUSE       1 = per-thread scratch buffers reused across requests, 0 = fresh arrays per request
"""
import os
import threading

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18306"))
MAX_FRAMES = int(os.environ.get("SVC_MAX_FRAMES", "8192"))
REUSE = os.environ.get("SVC_REUSE", "0") == "1"
BINS = 512
OUT_DIM = 16

rng = np.random.default_rng(9)
BANK = np.abs(rng.standard_normal((40000, BINS), dtype=np.float32))  # decoded spectrogram frames
SCALE = (1.0 / (BANK.std(0) + 1e-3)).astype(np.float32)
SHIFT = (-BANK.mean(0) * SCALE).astype(np.float32)
PROJ = (rng.standard_normal((BINS, OUT_DIM), dtype=np.float32) / np.sqrt(BINS)).astype(np.float32)

_tls = threading.local()


def scratch():
    s = getattr(_tls, "bufs", None)
    if s is None:
        s = _tls.bufs = (np.zeros((MAX_FRAMES, BINS), np.float32), np.empty((MAX_FRAMES, BINS), np.float32),
                         np.empty((MAX_FRAMES, OUT_DIM), np.float32))
    return s


def embed(start, n):
    n = min(n, MAX_FRAMES)
    frames = BANK[start:start + n]
    if REUSE:
        batch, x, h = scratch()
        batch[:n] = frames
        batch[n:] = 0.0
        np.multiply(batch, SCALE, out=x)
        np.add(x, SHIFT, out=x)
        x[n:] = 0.0
        np.matmul(x, PROJ, out=h)
    else:
        batch = np.zeros((MAX_FRAMES, BINS), np.float32)
        batch[:n] = frames
        x = batch * SCALE + SHIFT
        x[n:] = 0.0
        h = x @ PROJ
    pooled = h[:n].mean(0)
    return pooled / (np.linalg.norm(pooled) + 1e-6)


app = FastAPI()


class Clip(BaseModel):
    clip_id: int
    offset: int
    frames: int


@app.get("/health")
def health():
    return {"ok": True}


@app.post("/embed")
def handle(c: Clip):
    start = c.offset % (BANK.shape[0] - MAX_FRAMES)
    v = embed(start, c.frames)
    return {"clip_id": c.clip_id, "embedding": v.round(4).tolist()}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
