"""Recommendation: an ``async def`` endpoint that calls the feature store with a blocking client.

A common mistake: a synchronous socket client used inside an async handler. Every request
waits for the feature store's answer with the event loop blocked, so the service serves one
request at a time, at the store's latency; the CPU stays low.
"""

import threading

from fastapi import FastAPI, Request
from zoolib import NumpyModel, setting_int
from zoolib.featurestore import Client

app = FastAPI()
model = NumpyModel(width=64, layers=1)
_local = threading.local()


def store() -> Client:
    if not hasattr(_local, "client"):
        _local.client = Client(setting_int("STORE_PORT", 0))
    return _local.client


def load_item(user: str) -> list[int]:
    row = store().get(user)
    return [int(x * 1000) for x in row]


@app.get("/health")
async def health() -> dict:
    return {"ok": True}


@app.post("/recommend")
async def recommend(request: Request) -> dict:
    doc = await request.json()
    ids = load_item(str(doc.get("user", "0")))
    return {"score": model(ids)}
