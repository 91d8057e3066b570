"""Nearest-neighbour retrieval API: scores query embeddings against an item table, returns the top 10 ids."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import json
import signal
import threading

import numpy as np
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18803"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
SELECT = os.environ.get("SVC_TOPK", "sort")
N_ITEMS, DIM, K = 120_000, 64, 10

rng = np.random.default_rng(7)
ITEMS = rng.standard_normal((N_ITEMS, DIM), dtype=np.float32)
ITEMS /= np.linalg.norm(ITEMS, axis=1, keepdims=True)


def top_ids(scores):
    if SELECT == "partition":
        part = np.argpartition(-scores, K, axis=1)[:, :K]
        order = np.take_along_axis(scores, part, 1).argsort(axis=1)[:, ::-1]
        return np.take_along_axis(part, order, 1)
    return np.argsort(-scores, axis=1)[:, :K]


def search(queries):
    scores = queries @ ITEMS.T
    return top_ids(scores)


def app(environ, start_response):
    if environ["PATH_INFO"] == "/health":
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"ok": true}']
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(n))
    q = np.asarray(body["vectors"], dtype=np.float32)
    ids = search(q)
    out = json.dumps({"ids": ids.tolist()}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


class Server(BaseApplication):
    def __init__(self, application, options):
        self.options = options
        self.application = application
        super().__init__()

    def load_config(self):
        for k, v in self.options.items():
            self.cfg.set(k, v)

    def load(self):
        return self.application


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    Server(app, {"bind": f"127.0.0.1:{PORT}", "workers": 2, "worker_class": "sync",
                 "timeout": 60, "loglevel": "warning", "graceful_timeout": 2}).run()
