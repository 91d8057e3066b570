"""Basket scoring service: fetch live prices for a basket and score it with a small model."""
import asyncio
import json
import os
import subprocess
import sys
import urllib.request

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18805"))
PRICING_PORT = int(os.environ.get("SVC_PRICING_PORT", "18815"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)
W = rng.standard_normal((16, 8)).astype(np.float32)

app = FastAPI()


class Basket(BaseModel):
    skus: list[int]


def fetch_price(sku):
    with urllib.request.urlopen(f"http://127.0.0.1:{PRICING_PORT}/price?sku={sku}", timeout=10) as r:
        return json.loads(r.read())["price"]


@app.post("/score")
async def score(b: Basket):
    loop = asyncio.get_running_loop()
    price = await loop.run_in_executor(None, fetch_price, b.skus[0])
    x = np.zeros(16, np.float32)
    x[: min(15, len(b.skus))] = np.asarray(b.skus[:15], np.float32) % 13
    x[15] = price
    return {"score": float(np.tanh(x @ W).sum()), "price": price}


async def main():
    child = subprocess.Popen([sys.executable, os.path.join(here, "pricing.py"), str(PRICING_PORT)])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning"))
    task = asyncio.create_task(server.serve())
    await asyncio.sleep(LIFETIME)
    server.should_exit = True
    await task
    child.terminate()
    child.wait()


if __name__ == "__main__":
    asyncio.run(main())
