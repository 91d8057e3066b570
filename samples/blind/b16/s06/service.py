"""Ad-candidate scoring API (Flask under gunicorn gthread): splits the candidate list and scores the parts in worker processes."""
import multiprocessing as mp
import os
import threading

import numpy as np
from flask import Flask, jsonify, request

POOL_MODE = os.environ.get("SVC_POOL", "request")
PARTS = 2
DIM = 32

_rng = np.random.default_rng(11)
W1 = _rng.standard_normal((DIM, 64)).astype(np.float32)
W2 = _rng.standard_normal((64, 1)).astype(np.float32)

app = Flask(__name__)
_ctx = mp.get_context("fork")
_start_mu = threading.Lock()
_shared_pool = None


def score_part(rows):
    x = np.asarray(rows, dtype=np.float32)
    h = np.maximum(x @ W1, 0.0)
    return (h @ W2).ravel().tolist()


def new_pool():
    with _start_mu:
        return _ctx.Pool(PARTS)


def run_parts(parts):
    if POOL_MODE == "shared":
        return _shared_pool.map(score_part, parts)
    pool = new_pool()
    try:
        return pool.map(score_part, parts)
    finally:
        pool.close()
        pool.join()


if POOL_MODE == "shared":
    _shared_pool = new_pool()


@app.post("/score")
def score():
    cands = request.get_json()["candidates"]
    step = (len(cands) + PARTS - 1) // PARTS
    parts = [cands[i:i + step] for i in range(0, len(cands), step)]
    scores = [s for part in run_parts(parts) for s in part]
    best = int(np.argmax(scores))
    return jsonify({"best": best, "score": scores[best], "n": len(scores)})


@app.get("/health")
def health():
    return jsonify({"ok": True})
