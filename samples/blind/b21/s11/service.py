"""Basket offer API (FastAPI async handlers): fetches a quote from the pricing service and scores offers."""
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18811"))
PRICING_PORT = int(os.environ.get("SVC_PRICING_PORT", "18861"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
HERE = os.path.dirname(os.path.abspath(__file__))

rng = np.random.default_rng(0)
W = rng.standard_normal((16, 8)).astype(np.float32)


class PricingPool:
    def __init__(self, port, size=16):
        self.port = port
        self.size = size
        self.free = None

    async def start(self):
        self.free = asyncio.Queue()
        for _ in range(self.size):
            self.free.put_nowait(await asyncio.open_connection("127.0.0.1", self.port))

    async def quote(self, sku):
        reader, writer = await self.free.get()
        try:
            writer.write(f"QUOTE {sku}\n".encode())
            await writer.drain()
            return json.loads(await reader.readline())
        finally:
            self.free.put_nowait((reader, writer))


pricing = PricingPool(PRICING_PORT)
app = FastAPI()


@app.on_event("startup")
async def _startup():
    await pricing.start()


class Basket(BaseModel):
    sku: int
    features: list[float]


@app.post("/offer")
async def predict(b: Basket):
    quote = await pricing.quote(b.sku)
    x = np.asarray(b.features[:16], dtype=np.float32)
    offers = x @ W
    best = int(offers.argmax())
    return {"offer": best, "price": round(quote["base"] * (1 - quote["discount"]), 2)}


@app.get("/health")
async def health():
    return "ok"


def _expire(child):
    time.sleep(LIFETIME)
    child.terminate()
    os._exit(0)


if __name__ == "__main__":
    import uvicorn
    child = subprocess.Popen([sys.executable, os.path.join(HERE, "pricing.py"), str(PRICING_PORT)],
                             stdin=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", PRICING_PORT)).close()
            break
        except OSError:
            time.sleep(0.1)
    threading.Thread(target=_expire, args=(child,), daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
