"""Re-ranking service: WSGI app under gunicorn (gthread workers), NumPy two-layer scorer."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json
import signal
import threading

import numpy as np
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18853"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
THREADS = int(os.environ.get("SVC_THREADS", "6"))
NARROW = os.environ.get("SVC_NARROW_SECTION", "0") == "1"
DIM, HID, CANDS = 512, 2048, 128


class Ranker:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.w1 = rng.standard_normal((DIM, HID)) / np.sqrt(DIM)
        self.w2 = rng.standard_normal((HID, 1)) / np.sqrt(HID)
        self.items = rng.standard_normal((20000, DIM))
        self.guard = threading.Lock()
        self.served = 0
        self.score_sum = 0.0

    def _forward(self, feats):
        h = np.tanh(feats @ self.w1)
        return (h @ self.w2)[:, 0]

    def rank(self, user_vec, cand_ids):
        feats = self.items[cand_ids] * user_vec
        if NARROW:
            scores = self._forward(feats)
            with self.guard:
                self.served += 1
                self.score_sum += float(scores.mean())
        else:
            with self.guard:
                scores = self._forward(feats)
                self.served += 1
                self.score_sum += float(scores.mean())
        order = np.argsort(-scores)[:10]
        return [int(cand_ids[i]) for i in order], scores[order].tolist()


ranker = Ranker()


def app(environ, start_response):
    path = environ.get("PATH_INFO", "/")
    if path == "/health":
        body = b'{"ok": true}'
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        req = json.loads(environ["wsgi.input"].read(n) or b"{}")
        rng = np.random.default_rng(int(req.get("user", 0)))
        user_vec = rng.standard_normal(DIM)
        cands = np.asarray(req.get("candidates") or rng.integers(0, 20000, CANDS))
        ids, scores = ranker.rank(user_vec, cands)
        body = json.dumps({"items": ids, "scores": scores}).encode()
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
        "workers": 1,
        "worker_class": "gthread",
        "threads": THREADS,
        "loglevel": "warning",
        "when_ready": _when_ready,
        "graceful_timeout": 2,
    }).run()
