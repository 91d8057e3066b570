"""Recommendation API (FastAPI async): fetches the user's profile from the profile store and ranks 50 items for it."""
import asyncio
import json
import os
import subprocess
import sys

import numpy as np
import uvicorn
from fastapi import FastAPI

PORT = int(os.environ.get("SVC_PORT", "18808"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18809"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
POOL_SIZE = 16

rng = np.random.default_rng(4)
ITEMS = rng.standard_normal((50, 16)).astype(np.float32)
app = FastAPI()
_conns: asyncio.Queue = asyncio.Queue()
_store = None


async def fetch_profile(user):
    reader, writer = await _conns.get()
    try:
        writer.write(f"GET {user}\n".encode())
        await writer.drain()
        return json.loads(await reader.readline())
    finally:
        _conns.put_nowait((reader, writer))


@app.get("/recommend/{user}")
async def recommend(user: str):
    prof = await fetch_profile(user)
    u = np.asarray(prof["clicks"], dtype=np.float32)
    scores = ITEMS @ u - 0.001 * prof["age_days"]
    top = np.argsort(-scores)[:5]
    return {"user": user, "items": top.tolist()}


@app.get("/health")
async def health():
    return {"ok": True}


@app.on_event("startup")
async def _start():
    global _store
    here = os.path.dirname(os.path.abspath(__file__))
    _store = subprocess.Popen([sys.executable, os.path.join(here, "profile_store.py"), str(STORE_PORT), str(LIFETIME + 5)])
    for _ in range(100):
        try:
            r, w = await asyncio.open_connection("127.0.0.1", STORE_PORT)
            break
        except OSError:
            await asyncio.sleep(0.1)
    _conns.put_nowait((r, w))
    for _ in range(POOL_SIZE - 1):
        _conns.put_nowait(await asyncio.open_connection("127.0.0.1", STORE_PORT))
    asyncio.get_running_loop().call_later(LIFETIME, os._exit, 0)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
