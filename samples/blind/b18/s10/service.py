"""Spam-score service: FastAPI async handler with a small hashed-bag-of-words linear model."""
import os
import signal
import threading
import zlib

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18860"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
BUCKETS = 1 << 16
W = np.random.default_rng(0).standard_normal(BUCKETS).astype(np.float32) * 0.05

app = FastAPI()


class Message(BaseModel):
    text: str


@app.post("/spam")
async def spam(m: Message):
    idx = np.fromiter((zlib.crc32(t.encode()) % BUCKETS for t in m.text.lower().split()), dtype=np.int64)
    z = float(W[idx].sum()) if idx.size else 0.0
    p = 1.0 / (1.0 + float(np.exp(-z)))
    return {"spam": bool(p > 0.5), "p": round(p, 4)}


@app.get("/health")
async def health():
    return {"ok": True}


if __name__ == "__main__":
    import uvicorn
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
