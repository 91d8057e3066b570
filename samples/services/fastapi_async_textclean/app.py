"""Comment moderation: FastAPI on uvicorn, an ``async def`` endpoint that does CPU work.

The handler awaits the body, then cleans the text in plain Python and scores it, all on the
event loop: one thread does every request, one after the other (the loop is blocked while a
request is cleaned). CLEAN_MODE=fast makes the cleaning cheap (C-level calls).
"""

import json

from fastapi import FastAPI, Request
from zoolib import NumpyModel, setting
from zoolib.textwork import prepare, prepare_fast

app = FastAPI()
model = NumpyModel(width=256, layers=2)
clean = prepare_fast if setting("CLEAN_MODE", "careful") == "fast" else prepare


def handle(doc: dict) -> dict:
    ids = clean(doc["text"])
    return {"flagged": model(ids) > 0, "n": len(ids)}


@app.get("/health")
async def health() -> dict:
    return {"ok": True}


@app.post("/moderate")
async def moderate(request: Request) -> dict:
    return handle(json.loads(await request.body()))
