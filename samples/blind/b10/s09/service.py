"""Fraud score API (FastAPI, async)."""
import os
import signal
import threading

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18809"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

rng = np.random.default_rng(3)
W1 = rng.standard_normal((24, 64)).astype(np.float32)
W2 = rng.standard_normal((64, 1)).astype(np.float32)

app = FastAPI()


class Txn(BaseModel):
    amount: float
    features: list[float]


@app.post("/score")
async def score(txn: Txn):
    x = np.asarray(txn.features, dtype=np.float32)
    h = np.maximum(x @ W1, 0)
    p = float(1 / (1 + np.exp(-(h @ W2)[0])))
    return {"p": p, "flag": p > 0.9 and txn.amount > 100}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
