import multiprocessing as mp
import os, threading, time
import numpy as np
from flask import Flask, jsonify, request

POOL_MODE = os.environ.get("SVC_POOL", "request")
N_PROCS = int(os.environ.get("SVC_PROCS", "4"))
rng = np.random.default_rng(1)
CATALOG = rng.standard_normal((4000, 128)).astype(np.float32)
CATALOG /= np.linalg.norm(CATALOG, axis=1, keepdims=True)
_ctx = mp.get_context("fork")
_shared = None


def score_chunk(args):
    q, lo, hi = args
    s = CATALOG[lo:hi] @ q
    top = np.argsort(-s)[:5]
    return [(int(lo + i), float(s[i])) for i in top]


def get_pool():
    global _shared
    if _shared is None:
        _shared = _ctx.Pool(N_PROCS)
    return _shared


app = Flask(__name__)


@app.post("/similar")
def similar():
    q = np.asarray(request.get_json()["vector"], dtype=np.float32)
    q /= np.linalg.norm(q) or 1.0
    step = CATALOG.shape[0] // 8
    jobs = [(q, i, i + step) for i in range(0, CATALOG.shape[0], step)]
    if POOL_MODE == "request":
        pool = _ctx.Pool(N_PROCS)
        try:
            parts = pool.map(score_chunk, jobs)
        finally:
            pool.close()
            pool.join()
    else:
        parts = get_pool().map(score_chunk, jobs)
    best = sorted((p for part in parts for p in part), key=lambda t: -t[1])[:10]
    return jsonify({"items": best})


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    os._exit(0)


threading.Thread(target=_expire, daemon=True).start()
