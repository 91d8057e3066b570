import asyncio
import json
import os
import subprocess
import sys

import numpy as np
import uvicorn
from fastapi import FastAPI

PORT = int(os.environ.get("SVC_PORT", "18741"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18742"))
POOL_SIZE = 16

rng = np.random.default_rng(3)
W = rng.standard_normal((32, 8)).astype(np.float32)
app = FastAPI()
pool: asyncio.Queue = None


async def connect():
    for _ in range(100):
        try:
            return await asyncio.open_connection("127.0.0.1", STORE_PORT)
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("feature store unavailable")


@app.on_event("startup")
async def startup():
    global pool
    pool = asyncio.Queue()
    for _ in range(POOL_SIZE):
        await pool.put(await connect())


async def fetch(key):
    reader, writer = await pool.get()
    try:
        writer.write(f"GET {key}\n".encode())
        await writer.drain()
        return json.loads(await reader.readline())
    finally:
        pool.put_nowait((reader, writer))


@app.get("/score/{account}")
async def score(account: str):
    row = await fetch(account)
    x = np.asarray(row["f"], dtype=np.float32)
    logits = x @ W
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return {"account": account, "risk": round(float(p[0]), 5), "bucket": int(p.argmax())}


@app.get("/health")
async def health():
    return {"ok": True}


if __name__ == "__main__":
    subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "store.py")],
                     env=dict(os.environ, STORE_PORT=str(STORE_PORT)))
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
