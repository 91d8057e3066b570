"""Similar-item lookup: WSGI app under gunicorn sync workers; the catalogue is split into
shards that are scored in parallel worker processes."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json
import multiprocessing as mp
import signal
import threading
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18857"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SHARDS = int(os.environ.get("SVC_SHARDS", "2"))
KEEP_POOL = os.environ.get("SVC_KEEP_POOL", "0") == "1"
DIM, ITEMS = 64, 40000

CATALOGUE = np.random.default_rng(0).standard_normal((ITEMS, DIM)).astype(np.float32)
CATALOGUE /= np.linalg.norm(CATALOGUE, axis=1, keepdims=True)
BOUNDS = np.linspace(0, ITEMS, SHARDS + 1).astype(int)
_ctx = mp.get_context("fork")
_pool = None


def shard_topk(shard, query, k):
    lo, hi = BOUNDS[shard], BOUNDS[shard + 1]
    s = CATALOGUE[lo:hi] @ query
    idx = np.argpartition(-s, k)[:k]
    return (idx + lo).tolist(), s[idx].tolist()


def get_pool():
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=SHARDS, mp_context=_ctx)
    return _pool


def search(query, k):
    if KEEP_POOL:
        parts = list(get_pool().map(shard_topk, range(SHARDS), [query] * SHARDS, [k] * SHARDS))
    else:
        with ProcessPoolExecutor(max_workers=SHARDS, mp_context=_ctx) as pool:
            parts = list(pool.map(shard_topk, range(SHARDS), [query] * SHARDS, [k] * SHARDS))
    ids = [i for p in parts for i in p[0]]
    sc = [s for p in parts for s in p[1]]
    order = np.argsort(sc)[::-1][:k]
    return [ids[i] for i in order], [sc[i] for i in order]


def app(environ, start_response):
    if environ.get("PATH_INFO") == "/health":
        body = b'{"ok": true}'
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        req = json.loads(environ["wsgi.input"].read(n) or b"{}")
        q = np.random.default_rng(int(req.get("item", 0))).standard_normal(DIM).astype(np.float32)
        ids, sc = search(q / np.linalg.norm(q), int(req.get("k", 20)))
        body = json.dumps({"ids": ids, "scores": sc}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class Server(BaseApplication):
    def __init__(self, application, options):
        self.application = application
        self.options = options
        super().__init__()

    def load_config(self):
        for k, v in self.options.items():
            self.cfg.set(k, v)

    def load(self):
        return self.application


def _when_ready(server):
    t = threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM))
    t.daemon = True
    t.start()


if __name__ == "__main__":
    Server(app, {
        "bind": f"127.0.0.1:{PORT}",
        "workers": 2,
        "worker_class": "sync",
        "loglevel": "warning",
        "when_ready": _when_ready,
        "graceful_timeout": 2,
        "timeout": 60,
    }).run()
