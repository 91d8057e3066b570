"""Nearest-neighbour retrieval API (gunicorn sync workers, NumPy)."""
import json
import os
import signal
import threading

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18803"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
DTYPE = np.float32 if os.environ.get("SVC_F32", "0") == "1" else np.float64
PARTIAL = os.environ.get("SVC_PARTIAL", "0") == "1"
N_ITEMS, DIM, K = 40000, 128, 10

_rng = np.random.default_rng(7)
ITEMS = _rng.standard_normal((N_ITEMS, DIM)).astype(DTYPE)
ITEMS /= np.linalg.norm(ITEMS, axis=1, keepdims=True)


def search(queries):
    q = np.asarray(queries, dtype=DTYPE)
    scores = q @ ITEMS.T
    if PARTIAL:
        idx = np.argpartition(-scores, K, axis=1)[:, :K]
        order = np.take_along_axis(scores, idx, 1).argsort(axis=1)[:, ::-1]
        idx = np.take_along_axis(idx, order, 1)
    else:
        idx = np.argsort(-scores, axis=1)[:, :K]
    return idx, np.take_along_axis(scores, idx, 1)


def app(environ, start_response):
    if environ["PATH_INFO"] != "/search":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    n = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(n))
    idx, sc = search(body["queries"])
    out = json.dumps({"ids": idx.tolist(), "scores": np.round(sc, 4).tolist()}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


def _stop_later(server):
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()


class Server(BaseApplication):
    def load_config(self):
        for k, v in {"bind": f"127.0.0.1:{PORT}", "workers": 2, "worker_class": "sync",
                     "timeout": 60, "graceful_timeout": 3, "loglevel": "warning",
                     "when_ready": _stop_later}.items():
            self.cfg.set(k, v)

    def load(self):
        return app


if __name__ == "__main__":
    Server().run()
