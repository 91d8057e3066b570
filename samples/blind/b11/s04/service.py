"""Recommendation service: embed a user's recent items and return the best-matching catalogue entries."""
import asyncio
import os

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18804"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

rng = np.random.default_rng(0)
catalogue = rng.standard_normal((4000, 64)).astype(np.float32)
item_emb = rng.standard_normal((10000, 64)).astype(np.float32)

app = FastAPI()


class Req(BaseModel):
    items: list[int]
    k: int = 10


@app.post("/recommend")
async def recommend(r: Req):
    u = item_emb[np.asarray(r.items) % len(item_emb)].mean(axis=0)
    s = catalogue @ u
    top = np.argpartition(-s, r.k)[: r.k]
    top = top[np.argsort(-s[top])]
    return {"items": top.tolist()}


async def main():
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning"))
    task = asyncio.create_task(server.serve())
    await asyncio.sleep(LIFETIME)
    server.should_exit = True
    await task


if __name__ == "__main__":
    asyncio.run(main())
