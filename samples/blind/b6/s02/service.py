"""Product-ranking scorer: Flask app served by gunicorn gthread workers, torch MLP ranker."""
import os
import signal
import threading
import time

from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18402"))
INTRA = int(os.environ.get("SVC_INTRA_OP", "8"))
THREADS = int(os.environ.get("SVC_HTTP_THREADS", "8"))


def create_app():
    os.environ["OPENBLAS_NUM_THREADS"] = str(INTRA)
    import numpy as np
    from flask import Flask, jsonify, request

    rng = np.random.default_rng(0)

    class Ranker:
        """Two-tower-ish MLP ranker, weights exported from the training job as plain arrays."""

        def __init__(self, d_in=256, d=768):
            self.emb = (rng.standard_normal((50000, d_in)) * 0.1).astype(np.float32)
            self.w = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
                      for s in [(2 * d_in, d), (d, d), (d, d), (d, 1)]]

        def __call__(self, q_ids, item_ids):
            q = self.emb[q_ids].mean(axis=0)
            it = self.emb[item_ids].mean(axis=1)
            h = np.concatenate([np.broadcast_to(q, it.shape), it], axis=1)
            for w in self.w[:-1]:
                h = np.maximum(h @ w, 0.0)
            return (h @ self.w[-1])[:, 0]

    model = Ranker()
    N_CAND = 256
    catalog = rng.integers(0, 50000, size=(20000, 6))
    app = Flask(__name__)

    @app.post("/rank")
    def rank():
        body = request.get_json()
        q = np.asarray(body["query"])
        items = catalog[rng.integers(0, catalog.shape[0], size=N_CAND)]
        s = model(q, items)
        order = np.argsort(-s)[:10]
        return jsonify({"top": order.tolist(), "scores": s[order].tolist()})

    return app


class App(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 1)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", THREADS)
        self.cfg.set("timeout", 120)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return create_app()


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_lifetime, daemon=True).start()
    App().run()
