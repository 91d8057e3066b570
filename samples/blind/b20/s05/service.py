"""Item ranking service: scores a user vector against sharded item tables and returns the top items."""
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18855"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
SHARED_EXECUTOR = os.environ.get("SVC_SHARED_EXECUTOR", "0") == "1"
N_SHARDS = 4
DIM = 32

rng = np.random.default_rng(7)
SHARDS = [rng.standard_normal((6000, DIM)).astype(np.float32) for _ in range(N_SHARDS)]

app = Flask(__name__)
_executor = None


def score_shard(args):
    idx, user = args
    s = SHARDS[idx] @ user
    top = np.argpartition(-s, 10)[:10]
    return [(int(idx * 100000 + i), float(s[i])) for i in top]


def get_executor():
    global _executor
    if _executor is None:
        _executor = ProcessPoolExecutor(max_workers=2)
    return _executor


def run_shards(user):
    jobs = [(i, user) for i in range(N_SHARDS)]
    if SHARED_EXECUTOR:
        return list(get_executor().map(score_shard, jobs))
    with ProcessPoolExecutor(max_workers=2) as ex:
        return list(ex.map(score_shard, jobs))


@app.post("/rank")
def rank():
    user = np.asarray(request.get_json()["user"], dtype=np.float32)
    parts = run_shards(user)
    merged = sorted((p for part in parts for p in part), key=lambda t: -t[1])[:10]
    return jsonify({"items": [i for i, _ in merged]})


@app.get("/health")
def health():
    return {"ok": True}


def _expire(pid):
    time.sleep(LIFETIME)
    os.kill(pid, 15)


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
    threading.Thread(target=_expire, args=(os.getpid(),), daemon=True).start()
    Server().run()
