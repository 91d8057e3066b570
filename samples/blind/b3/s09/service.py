"""Inference service."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from flask import Flask, jsonify, request

ROWS = 200_000
DIM = 128
SLOTS = 48
MODE = os.environ.get("SVC_MODE", "a")

rng = np.random.default_rng(0)
TABLE = rng.standard_normal((ROWS, DIM), dtype=np.float32)
_scratch = np.empty_like(TABLE)

app = Flask(__name__)


def rank(user_w, q, cands):
    if MODE == "a":
        np.multiply(TABLE, user_w, out=_scratch)
        sims = (_scratch @ q)[cands]
    else:
        sims = (TABLE[cands] * user_w) @ q
    slots = np.full((ROWS, SLOTS), -np.inf, dtype=np.float32)
    slots[cands, 0] = sims
    order = np.argsort(-slots[cands, 0])[:20]
    return cands[order], slots[cands[order], 0]


@app.get("/health")
def health():
    return jsonify(ok=True)


@app.post("/rank")
def rank_endpoint():
    body = request.get_json()
    user_w = np.asarray(body["weights"], dtype=np.float32)
    q = np.asarray(body["query"], dtype=np.float32)
    cands = np.asarray(body["candidates"], dtype=np.int64)
    ids, scores = rank(user_w, q, cands)
    return jsonify(items=ids.tolist(), scores=scores.round(4).tolist())
