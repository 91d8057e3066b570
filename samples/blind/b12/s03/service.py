"""Candidate re-ranking service: bilinear query/candidate scoring in NumPy, served by gunicorn (gthread)."""
import json
import os
import signal
import threading
import time

import numpy as np

PORT = int(os.environ.get("SVC_PORT", "18803"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
EINSUM_PLAN = os.environ.get("SVC_EINSUM_OPTIMIZE", "0") == "1"
APP_THREADS = int(os.environ.get("SVC_APP_THREADS", "4"))

rng = np.random.default_rng(0)
DIM = 64
W = rng.normal(size=(DIM, DIM)).astype(np.float32) / DIM
CANDS = rng.normal(size=(400, DIM)).astype(np.float32)
QUERIES = rng.normal(size=(256, DIM)).astype(np.float32)


def rank(q_idx, k=10):
    q = QUERIES[q_idx]
    scores = np.einsum("ik,kl,jl->ij", q, W, CANDS, optimize=EINSUM_PLAN)
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    return top


def app(environ, start_response):
    size = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(size) or b"{}")
    idx = np.asarray(body.get("queries", [0]), dtype=np.int64) % len(QUERIES)
    top = rank(idx)
    payload = json.dumps({"top": top.tolist()}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


if __name__ == "__main__":
    from gunicorn.app.base import BaseApplication

    class Server(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"127.0.0.1:{PORT}")
            self.cfg.set("workers", 1)
            self.cfg.set("worker_class", "gthread")
            self.cfg.set("threads", APP_THREADS)
            self.cfg.set("loglevel", "warning")
            self.cfg.set("graceful_timeout", 2)

        def load(self):
            return app

    def _stop_later():
        time.sleep(LIFETIME)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        os._exit(0)

    threading.Thread(target=_stop_later, daemon=True).start()
    Server().run()
