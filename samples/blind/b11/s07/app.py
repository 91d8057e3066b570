"""Candidate scoring API: scores a request's candidates in parallel chunks with a linear model."""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from flask import Flask, jsonify, request

CHUNKS = int(os.environ.get("SVC_CHUNKS", "16"))
SHARED_POOL = os.environ.get("SVC_POOL", "per-request") == "shared"

rng = np.random.default_rng(0)
features = rng.standard_normal((20000, 32)).astype(np.float32)
w = rng.standard_normal(32).astype(np.float32)
_pool = ThreadPoolExecutor(max_workers=CHUNKS) if SHARED_POOL else None

app = Flask(__name__)


def score_chunk(ids):
    return features[ids] @ w


@app.post("/rank")
def rank():
    ids = np.asarray(request.get_json()["candidates"]) % len(features)
    parts = np.array_split(ids, CHUNKS)
    if SHARED_POOL:
        scores = list(_pool.map(score_chunk, parts))
    else:
        with ThreadPoolExecutor(max_workers=CHUNKS) as pool:
            scores = list(pool.map(score_chunk, parts))
    s = np.concatenate(scores)
    order = np.argsort(-s)[:10]
    return jsonify({"top": ids[order].tolist()})
