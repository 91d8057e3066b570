"""Spam-score API: async FastAPI endpoint with a small hashed-feature logistic model."""
import os
import signal
import threading
import time
import zlib

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18806"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
NB = 1 << 14
W = np.random.default_rng(0).normal(size=NB).astype(np.float32)

app = FastAPI()


class Message(BaseModel):
    subject: str
    body: str


@app.post("/spam")
async def score(m: Message):
    toks = (m.subject + " " + m.body).lower().split()
    idx = np.fromiter((zlib.crc32(t.encode()) % NB for t in toks), dtype=np.int64, count=len(toks))
    z = float(W[idx].sum()) / max(1, len(toks))
    return {"p_spam": 1.0 / (1.0 + np.exp(-z))}


def _stop_later():
    time.sleep(LIFETIME)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop_later, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
