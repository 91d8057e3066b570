"""Session embedding service: assembles a user's feature blocks from the block cache into one
float32 matrix and pools it into a profile vector. FastAPI, sync handlers."""
import os
import signal
import threading

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18858"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REUSE = os.environ.get("SVC_REUSE_BUFFER", "0") == "1"
D = 1024
BLOCK_ROWS = 256
BLOCKS_PER_REQ = 64
ROWS = BLOCK_ROWS * BLOCKS_PER_REQ

_rng = np.random.default_rng(0)
BLOCK_CACHE = [_rng.standard_normal((BLOCK_ROWS, D)).astype(np.float32).tobytes() for _ in range(12)]
BLOCK_BYTES = len(BLOCK_CACHE[0])
PROJ = _rng.standard_normal((D, 32)).astype(np.float32) / np.sqrt(D)
_local = threading.local()

app = FastAPI()


class Query(BaseModel):
    user: int


def assemble(block_ids):
    if REUSE:
        buf = getattr(_local, "buf", None)
        if buf is None:
            buf = _local.buf = bytearray(ROWS * D * 4)
        view = memoryview(buf)
        for i, b in enumerate(block_ids):
            view[i * BLOCK_BYTES:(i + 1) * BLOCK_BYTES] = BLOCK_CACHE[b]
        data = buf
    else:
        data = b"".join(BLOCK_CACHE[b] for b in block_ids)
    return np.frombuffer(data, dtype=np.float32).reshape(ROWS, D)


@app.post("/profile")
def profile(q: Query):
    rng = np.random.default_rng(q.user)
    block_ids = rng.integers(0, len(BLOCK_CACHE), BLOCKS_PER_REQ).tolist()
    x = assemble(block_ids)
    pooled = x[::16].mean(axis=0)
    vec = np.tanh(pooled @ PROJ)
    return {"user": q.user, "vector": vec.round(4).tolist()}


@app.get("/health")
def health():
    return {"ok": True}


if __name__ == "__main__":
    import uvicorn
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
