"""Text embedding API: FastAPI on uvicorn with 2 worker processes, NumPy encoder."""
import os
import signal
import threading
import time

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18803"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REUSE = os.environ.get("SVC_REUSE_BATCH", "0") == "1"
MAX_LEN = 512
DIM = 1024
MAX_BATCH = 32
PAD_VALUE = 0.0

rng = np.random.default_rng(3)
token_emb = rng.standard_normal((8000, DIM)).astype(np.float32)
proj = (rng.standard_normal((DIM, DIM)) / np.sqrt(DIM)).astype(np.float32)
_local = threading.local()

app = FastAPI()


class Batch(BaseModel):
    docs: list[list[int]]


def padded_batch(seqs):
    n = len(seqs)
    if REUSE:
        buf = getattr(_local, "buf", None)
        if buf is None:
            buf = _local.buf = np.full((MAX_BATCH, MAX_LEN, DIM), PAD_VALUE, dtype=np.float32)
        batch = buf[:n]
    else:
        batch = np.full((n, MAX_LEN, DIM), PAD_VALUE, dtype=np.float32)
    for i, s in enumerate(seqs):
        batch[i, :len(s)] = token_emb[s]
    return batch


@app.post("/embed")
def embed(b: Batch):
    seqs = [np.asarray(d[:MAX_LEN]) % len(token_emb) for d in b.docs[:MAX_BATCH]]
    batch = padded_batch(seqs)
    pooled = np.stack([batch[i, :len(s)].mean(0) for i, s in enumerate(seqs)])
    out = np.tanh(pooled @ proj)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return {"n": len(seqs), "norm0": float(out[0, :4].sum())}


@app.get("/health")
def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(8)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning", access_log=False)
