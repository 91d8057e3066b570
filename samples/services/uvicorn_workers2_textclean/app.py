"""Search-query understanding: FastAPI under ``uvicorn --workers 2``, sync endpoint.

Each worker process cleans the query text in plain Python (zoolib.textwork.prepare) and
runs a small NumPy ranker on it. Users attach to the uvicorn master, whose two children
do the work. CLEAN_MODE=fast makes the cleaning cheap.
"""

from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import NumpyModel, setting
from zoolib.textwork import prepare, prepare_fast

app = FastAPI()
ranker = NumpyModel(width=128, layers=3)
clean = prepare_fast if setting("CLEAN_MODE", "careful") == "fast" else prepare


class Query(BaseModel):
    text: str


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/rank")
def rank(query: Query) -> dict:
    ids = clean(query.text, max_len=128)
    return {"score": ranker(ids)}
