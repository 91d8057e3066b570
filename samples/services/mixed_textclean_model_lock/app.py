"""Ticket routing: plain-Python text cleaning, then a shared model behind a lock.

Two bottlenecks at once. Each request's text is cleaned in plain Python (holding the GIL)
and then scored by one shared NumPy model under a lock (GEMMs, GIL released). The cleaning
is the larger cost: CLEAN_MODE=fast (cheap cleaning) gains more than MODEL_COPIES=per-thread
(no lock), which is the secondary bottleneck.
"""

import copy
import threading

from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import NumpyModel, setting
from zoolib.textwork import prepare, prepare_fast

clean = prepare_fast if setting("CLEAN_MODE", "careful") == "fast" else prepare
PER_THREAD = setting("MODEL_COPIES", "shared") == "per-thread"
router = NumpyModel(width=512, layers=3, batch=16)
router_lock = threading.Lock()
_local = threading.local()
app = FastAPI()


class Ticket(BaseModel):
    text: str


def score(ids: list[int]) -> float:
    if PER_THREAD:
        if not hasattr(_local, "router"):
            _local.router = copy.deepcopy(router)
        return _local.router(ids)
    with router_lock:
        return router(ids)


def handle(t: Ticket) -> dict:
    return {"queue": int(score(clean(t.text))) % 7}


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/route")
def route(t: Ticket) -> dict:
    return handle(t)
