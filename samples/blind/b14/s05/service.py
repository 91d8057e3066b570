"""Batch pricing endpoint: splits a basket into chunks and prices them in worker processes."""
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from flask import Flask, jsonify, request

POOL_MODE = os.environ.get("SVC_POOL", "request")
N_PROCS = 2
rng = np.random.default_rng(9)
WEIGHTS = rng.standard_normal((48, 16)).astype(np.float32)
BASKETS = rng.standard_normal((128, 64, 48)).astype(np.float32)

app = Flask(__name__)
_shared_pool = None


def price_chunk(chunk):
    h = np.tanh(chunk @ WEIGHTS)
    return float(h.sum())


def _pool():
    global _shared_pool
    if _shared_pool is None:
        _shared_pool = ProcessPoolExecutor(max_workers=N_PROCS)
    return _shared_pool


def price_basket(basket):
    chunks = np.array_split(basket, N_PROCS)
    if POOL_MODE == "shared":
        return sum(_pool().map(price_chunk, chunks))
    with ProcessPoolExecutor(max_workers=N_PROCS) as pool:
        return sum(pool.map(price_chunk, chunks))


@app.get("/price")
def price():
    b = int(request.args.get("basket", 0)) % len(BASKETS)
    return jsonify(basket=b, total=round(price_basket(BASKETS[b]), 4))
