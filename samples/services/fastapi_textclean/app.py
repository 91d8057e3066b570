"""Support-ticket triage: FastAPI on uvicorn, a sync endpoint (FastAPI's threadpool).

Each request's text is cleaned in plain Python (zoolib.textwork.prepare: html.unescape,
re.sub, a unicodedata loop, str methods) and scored by a small NumPy model. The cleaning is
most of the CPU and holds the GIL; CLEAN_MODE=fast does the same cleaning in C-level calls.
"""

from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import NumpyModel, setting
from zoolib.textwork import prepare, prepare_fast

app = FastAPI()
model = NumpyModel(width=256, layers=2)
clean = prepare_fast if setting("CLEAN_MODE", "careful") == "fast" else prepare


class Ticket(BaseModel):
    text: str


def handle(ticket: Ticket) -> dict:
    ids = clean(ticket.text)
    return {"score": model(ids), "n": len(ids)}


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/predict")
def predict(ticket: Ticket) -> dict:
    return handle(ticket)
