"""Churn-risk scorer: FastAPI (async def), user features from the local feature store, torch MLP.

Env:
  SVC_PORT          listen port (default 18303)
  SVC_STORE_PORT    feature store port (default 18353); the store is started as a child process
  SVC_STORE_CONNS   connections kept open to the store (default 1)
  SVC_STORE_DELAY_MS  passed to the store child (default 6)
"""
import asyncio
import json
import os
import subprocess
import sys
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18303"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18353"))
STORE_CONNS = int(os.environ.get("SVC_STORE_CONNS", "1"))
HERE = os.path.dirname(os.path.abspath(__file__))

torch.set_num_threads(1)
torch.manual_seed(5)


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = torch.nn.Linear(64, 128)
        self.ctx = torch.nn.Linear(16, 128)
        self.head = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, u, c):
        return torch.sigmoid(self.head(self.user(u) + self.ctx(c))).squeeze(-1)


class StoreClient:
    """Keeps persistent connections to the feature store; one request in flight per connection."""

    def __init__(self, port, n):
        self.port = port
        self.n = n
        self.conns = asyncio.Queue()

    async def start(self):
        for _ in range(self.n):
            for _ in range(100):
                try:
                    r, w = await asyncio.open_connection("127.0.0.1", self.port)
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            self.conns.put_nowait((r, w))

    async def get(self, key):
        r, w = await self.conns.get()
        try:
            w.write(f"GET {key}\n".encode())
            await w.drain()
            line = await r.readline()
        finally:
            self.conns.put_nowait((r, w))
        return json.loads(line)


model = Scorer().eval()
store = StoreClient(STORE_PORT, STORE_CONNS)
child = None
app = FastAPI()


@app.on_event("startup")
async def _startup():
    global child
    env = dict(os.environ, STORE_PORT=str(STORE_PORT), STORE_DELAY_MS=os.environ.get("SVC_STORE_DELAY_MS", "6"))
    child = subprocess.Popen([sys.executable, os.path.join(HERE, "store.py")], env=env)
    await store.start()


@app.on_event("shutdown")
async def _shutdown():
    if child:
        child.terminate()


class Req(BaseModel):
    user_id: str
    context: list[float]


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/score")
async def score(req: Req):
    t0 = time.perf_counter()
    feats = await store.get(req.user_id)
    with torch.inference_mode():
        p = model(torch.tensor([feats]), torch.tensor([req.context]))
    return {"user_id": req.user_id, "risk": round(float(p[0]), 4), "ms": round((time.perf_counter() - t0) * 1000, 2)}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
