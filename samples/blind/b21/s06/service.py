"""Lead scoring API (Flask app served by gunicorn sync workers)."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from flask import Flask, jsonify, request

PORT = int(os.environ.get("SVC_PORT", "18806"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
POOL_PER_CALL = os.environ.get("SVC_POOL_PER_CALL", "1") == "1"
CHUNKS = 4
FEATURES = 256

rng = np.random.default_rng(0)
W1 = (rng.standard_normal((FEATURES, 512)) * 0.05).astype(np.float32)
W2 = (rng.standard_normal((512, 512)) * 0.05).astype(np.float32)
W3 = (rng.standard_normal((512, 1)) * 0.05).astype(np.float32)


def score_chunk(x):
    h = np.maximum(x @ W1, 0)
    h = np.maximum(h @ W2, 0)
    return (h @ W3)[:, 0]


_pool = None


def worker_pool():
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(CHUNKS)
    return _pool


app = Flask(__name__)


@app.route("/score", methods=["POST"])
def predict():
    body = request.get_json()
    x = np.asarray(body["rows"], dtype=np.float32)
    chunks = np.array_split(x, CHUNKS)
    if POOL_PER_CALL:
        with ProcessPoolExecutor(CHUNKS) as pool:
            parts = list(pool.map(score_chunk, chunks))
    else:
        parts = list(worker_pool().map(score_chunk, chunks))
    scores = np.concatenate(parts)
    return jsonify({"n": int(scores.shape[0]), "best": int(scores.argmax()), "mean": float(scores.mean())})


@app.route("/health")
def health():
    return "ok"


def main():
    from gunicorn.app.base import BaseApplication

    def when_ready(server):
        def stop():
            time.sleep(LIFETIME)
            os.kill(os.getpid(), signal.SIGTERM)
        threading.Thread(target=stop, daemon=True).start()

    class Server(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"127.0.0.1:{PORT}")
            self.cfg.set("workers", 2)
            self.cfg.set("worker_class", "sync")
            self.cfg.set("timeout", 60)
            self.cfg.set("graceful_timeout", 3)
            self.cfg.set("loglevel", "warning")
            self.cfg.set("when_ready", when_ready)

        def load(self):
            return app

    Server().run()


if __name__ == "__main__":
    main()
