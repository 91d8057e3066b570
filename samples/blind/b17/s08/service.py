"""Nearest-item retrieval: gunicorn (gthread workers) + Flask, NumPy scoring over an item catalog."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import signal
import threading

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18808"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
RANKING = os.environ.get("SVC_RANKING", "sort")
N_ITEMS, DIM = 60000, 64

rng = np.random.default_rng(11)
CATALOG = rng.standard_normal((N_ITEMS, DIM)).astype(np.float32)
CATALOG /= np.linalg.norm(CATALOG, axis=1, keepdims=True)

app = Flask(__name__)


def top_k(scores, k):
    if RANKING == "partition":
        idx = np.argpartition(-scores, k, axis=1)[:, :k]
        part = np.take_along_axis(scores, idx, axis=1)
        order = np.argsort(-part, axis=1)
        return np.take_along_axis(idx, order, axis=1)
    return np.argsort(-scores, axis=1)[:, :k]


@app.post("/similar")
def similar():
    req = request.get_json()
    q = np.asarray(req["vectors"], dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True) + 1e-6
    scores = q @ CATALOG.T
    idx = top_k(scores, int(req.get("k", 20)))
    return jsonify({"items": idx.tolist()})


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


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    Server(app, {"bind": f"127.0.0.1:{PORT}", "workers": 2, "worker_class": "gthread", "threads": 4,
                 "timeout": 30, "loglevel": "warning"}).run()
