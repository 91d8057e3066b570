"""Fraud scoring API: FastAPI async endpoint, small NumPy logistic model."""
import os
import threading
import time

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18808"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
rng = np.random.default_rng(8)
W1 = rng.standard_normal((24, 64)).astype(np.float32)
W2 = rng.standard_normal(64).astype(np.float32)

app = FastAPI()


class Txn(BaseModel):
    amount: float
    merchant: int
    country: int
    features: list[float]


@app.post("/score")
async def score(t: Txn):
    x = np.asarray(t.features[:21] + [np.log1p(t.amount), t.merchant % 97 / 97, t.country % 31 / 31], np.float32)
    h = np.maximum(x @ W1, 0)
    p = 1.0 / (1.0 + np.exp(-float(h @ W2) / 8))
    return {"fraud": float(p), "review": bool(p > 0.9)}


@app.get("/health")
async def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
