import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18701"))
SHARDS = 4
REUSE = os.environ.get("SVC_SHARD_POOL", "per_request") == "shared"

rng = np.random.default_rng(2)
INDEX = [rng.standard_normal((4000, 96)).astype(np.float32) for _ in range(SHARDS)]
app = Flask(__name__)
_pool = {"pid": None, "ex": None}


def search_shard(args):
    shard, q, k = args
    s = INDEX[shard] @ q
    top = np.argpartition(-s, k)[:k]
    return [(int(shard * 100000 + i), float(s[i])) for i in top]


def shard_pool():
    if REUSE:
        if _pool["pid"] != os.getpid():
            _pool["ex"] = ProcessPoolExecutor(SHARDS, mp_context=mp.get_context("fork"))
            _pool["pid"] = os.getpid()
        return _pool["ex"], False
    return ProcessPoolExecutor(SHARDS, mp_context=mp.get_context("fork")), True


@app.post("/search")
def search():
    body = request.get_json()
    q = np.asarray(body["vector"], dtype=np.float32)
    k = int(body.get("k", 10))
    ex, owned = shard_pool()
    try:
        hits = [h for part in ex.map(search_shard, [(i, q, k) for i in range(SHARDS)]) for h in part]
    finally:
        if owned:
            ex.shutdown(wait=True)
    hits.sort(key=lambda h: -h[1])
    return jsonify({"hits": [{"id": i, "score": round(s, 4)} for i, s in hits[:k]]})


@app.get("/health")
def health():
    return {"ok": True}


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 2)
        self.cfg.set("worker_class", "sync")
        self.cfg.set("loglevel", "warning")
        self.cfg.set("timeout", 60)

    def load(self):
        return app


if __name__ == "__main__":
    Server().run()
