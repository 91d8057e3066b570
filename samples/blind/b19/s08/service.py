"""Product ranking API (Flask): splits each candidate list into shards scored by worker processes."""
import multiprocessing as mp
import os
import threading

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

PORT = int(os.environ.get("SVC_PORT", "18808"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SHARED_POOL = os.environ.get("SVC_SHARED_POOL", "0") == "1"
SHARDS = 4

rng = np.random.default_rng(21)
CATALOG = rng.standard_normal((20000, 64)).astype(np.float32)
W = rng.standard_normal((64, 64)).astype(np.float32) * 0.1


def score_shard(args):
    user, ids = args
    items = CATALOG[np.asarray(ids)]
    h = np.tanh(items @ W)
    s = h @ np.asarray(user, np.float32)
    order = np.argsort(-s)[:5]
    return [(int(ids[i]), float(s[i])) for i in order]


app = Flask(__name__)
_pool = None


def rank(user, candidates):
    shards = [(user, candidates[i::SHARDS]) for i in range(SHARDS)]
    if SHARED_POOL:
        parts = _pool.map(score_shard, shards)
    else:
        with mp.Pool(SHARDS) as pool:
            parts = pool.map(score_shard, shards)
    merged = sorted((x for p in parts for x in p), key=lambda t: -t[1])
    return merged[:10]


@app.post("/rank")
def rank_endpoint():
    body = request.get_json()
    return jsonify({"top": rank(body["user"], body["candidates"])})


def main():
    global _pool
    if SHARED_POOL:
        _pool = mp.Pool(SHARDS)
    srv = make_server("127.0.0.1", PORT, app, threaded=True)
    threading.Timer(LIFETIME, srv.shutdown).start()
    try:
        srv.serve_forever()
    finally:
        if _pool is not None:
            _pool.terminate()


if __name__ == "__main__":
    main()
