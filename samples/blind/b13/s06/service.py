"""Similarity search API (Flask): scores a query embedding against a small catalogue in a worker process."""
import multiprocessing as mp
import os
import threading
import time

import numpy as np
from flask import Flask, jsonify, request

PORT = int(os.environ.get("SVC_PORT", "18806"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
USE_POOL = os.environ.get("SVC_WORKER_POOL", "0") == "1"

rng = np.random.default_rng(3)
CATALOGUE = rng.standard_normal((2000, 64)).astype(np.float32)
CATALOGUE /= np.linalg.norm(CATALOGUE, axis=1, keepdims=True)
ctx = mp.get_context("fork")
pool = None


def search(q, k=10):
    q = np.asarray(q, dtype=np.float32)
    q /= np.linalg.norm(q) + 1e-9
    sims = CATALOGUE @ q
    idx = np.argpartition(-sims, k)[:k]
    idx = idx[np.argsort(-sims[idx])]
    return idx.tolist(), sims[idx].tolist()


def _child(q, conn):
    conn.send(search(q))
    conn.close()


def run_isolated(q):
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(q, child))
    p.start()
    child.close()
    res = parent.recv()
    p.join()
    return res


app = Flask(__name__)


@app.post("/search")
def do_search():
    q = request.get_json()["vector"]
    if USE_POOL:
        ids, scores = pool.apply(search, (q,))
    else:
        ids, scores = run_isolated(q)
    return jsonify({"ids": ids, "scores": scores})


def _stop():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    if USE_POOL:
        pool = ctx.Pool(2)
    threading.Thread(target=_stop, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
