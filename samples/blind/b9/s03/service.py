import os

os.environ["OPENBLAS_NUM_THREADS"] = os.environ.get("SVC_BLAS_THREADS", "1")

import numpy as np
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18731"))
HIDDEN = 512


class Ranker:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        dims = [256] + [HIDDEN] * 6
        self.layers = [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a),
                        np.zeros(b, dtype=np.float32)) for a, b in zip(dims[:-1], dims[1:])]
        self.head = rng.standard_normal(HIDDEN).astype(np.float32) / np.sqrt(HIDDEN)

    def __call__(self, x):
        h = x
        for w, b in self.layers:
            h = np.maximum(h @ w + b, 0.0)
        return h @ self.head


model = Ranker()
app = Flask(__name__)


@app.post("/rank")
def rank():
    body = request.get_json()
    rng = np.random.default_rng(int(body["seed"]))
    x = rng.standard_normal((int(body["n"]), 256), dtype=np.float32)
    s = model(x)
    order = np.argsort(-s)[:10]
    return jsonify({"top": order.tolist(), "scores": [round(float(v), 4) for v in s[order]]})


@app.get("/health")
def health():
    return {"ok": True}


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 2)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", 4)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return app


if __name__ == "__main__":
    Server().run()
