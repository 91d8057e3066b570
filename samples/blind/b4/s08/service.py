"""Basket recommendation service."""
import asyncio
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
from fastapi import FastAPI
from pydantic import BaseModel

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_PATH = os.path.join(HERE, "basket.onnx")
PRICING_PORT = int(os.environ.get("SVC_PRICING_PORT", "18258"))
N_SKUS = 5000


def export_model():
    import torch

    class Basket(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.EmbeddingBag(N_SKUS, 64, mode="mean")
            self.out = torch.nn.Linear(65, N_SKUS)

        def forward(self, skus, budget):
            return self.out(torch.cat([self.emb(skus), budget], dim=1))

    torch.manual_seed(0)
    tmp = MODEL_PATH + f".{os.getpid()}.tmp"
    torch.onnx.export(Basket().eval(), (torch.zeros(1, 8, dtype=torch.long), torch.zeros(1, 1)), tmp,
                      input_names=["skus", "budget"], output_names=["logits"],
                      dynamic_axes={"skus": {1: "n"}}, dynamo=False)
    os.replace(tmp, MODEL_PATH)


class PricingClient:
    """Small connection pool to the pricing backend."""

    def __init__(self, size=16):
        self.size = size
        self.pool = None

    async def _ensure(self):
        if self.pool is None:
            self.pool = asyncio.Queue()
            for _ in range(self.size):
                self.pool.put_nowait(await asyncio.open_connection("127.0.0.1", PRICING_PORT))

    async def prices(self, skus):
        await self._ensure()
        reader, writer = await self.pool.get()
        try:
            writer.write((json.dumps({"skus": skus}) + "\n").encode())
            await writer.drain()
            return json.loads(await reader.readline())["prices"]
        finally:
            self.pool.put_nowait((reader, writer))


if not os.path.exists(MODEL_PATH):
    export_model()
backend = subprocess.Popen([sys.executable, os.path.join(HERE, "pricing.py"), str(PRICING_PORT),
                            os.environ.get("SVC_PRICING_DELAY_MS", "60")])
so = ort.SessionOptions()
so.intra_op_num_threads = 1
session = ort.InferenceSession(MODEL_PATH, so, providers=["CPUExecutionProvider"])
pricing = PricingClient()
app = FastAPI()


class Basket(BaseModel):
    skus: list[int]
    budget: float


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/recommend")
async def handle(b: Basket):
    logits = session.run(None, {"skus": np.array([b.skus], dtype=np.int64),
                                "budget": np.array([[b.budget]], dtype=np.float32)})[0][0]
    cands = [int(i) for i in np.argpartition(-logits, 20)[:20]]
    prices = await pricing.prices([str(c) for c in cands])
    picks = [c for c in cands if prices[str(c)] <= b.budget][:5]
    return {"recommended": picks}
