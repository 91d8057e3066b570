"""Risk scoring API (FastAPI async + executor): expands an account's history into a feature block, normalises it and scores it."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18807"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
REUSE = os.environ.get("SVC_WORKSPACE", "request") == "thread"
ROWS, COLS = 6144, 2048

rng = np.random.default_rng(2)
MU = rng.standard_normal(COLS).astype(np.float32)
SD = (rng.random(COLS) + 0.5).astype(np.float32)
W = rng.standard_normal(COLS).astype(np.float32)
DECAY = np.exp(-np.arange(ROWS, dtype=np.float32) / 2000.0)[:, None]

executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="score")
_tls = threading.local()
app = FastAPI()


class Account(BaseModel):
    history: list[float]


def workspace():
    ws = getattr(_tls, "ws", None)
    if ws is None:
        ws = _tls.ws = (np.empty((ROWS, COLS), np.float32), np.empty((ROWS, COLS), np.float32))
    return ws


def score_block(hist):
    row = np.resize(np.asarray(hist, dtype=np.float32), COLS)
    if REUSE:
        x, z = workspace()
        np.multiply(DECAY, row, out=x)
        np.subtract(x, MU, out=z)
        np.divide(z, SD, out=z)
        np.clip(z, -3.0, 3.0, out=z)
    else:
        x = DECAY * row
        z = (x - MU) / SD
        z = np.clip(z, -3.0, 3.0)
    s = z @ W
    return float(s[-256:].mean()), float(s.max())


@app.post("/risk")
async def risk(acct: Account):
    loop = asyncio.get_running_loop()
    recent, peak = await loop.run_in_executor(executor, score_block, acct.history)
    return {"recent": recent, "peak": peak}


@app.get("/health")
async def health():
    return {"ok": True}


async def _lifetime():
    await asyncio.sleep(LIFETIME)
    os._exit(0)


@app.on_event("startup")
async def _start():
    asyncio.get_running_loop().create_task(_lifetime())


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
