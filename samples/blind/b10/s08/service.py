"""Credit decision API: gradient-boosted trees evaluated in Python, served by gunicorn gthread."""
import json
import os
import random
import signal
import threading

from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18808"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
WORKERS = int(os.environ.get("SVC_WORKERS", "1"))
THREADS = int(os.environ.get("SVC_THREADS", "8"))
N_FEATURES = 40


def build_forest(n_trees=300, depth=6, seed=0):
    rnd = random.Random(seed)
    forest = []
    for _ in range(n_trees):
        n_nodes = 2 ** depth - 1
        feat = [rnd.randrange(N_FEATURES) for _ in range(n_nodes)]
        thr = [rnd.uniform(-1, 1) for _ in range(n_nodes)]
        leaves = [rnd.uniform(-0.1, 0.1) for _ in range(2 ** depth)]
        forest.append((feat, thr, leaves, n_nodes))
    return forest


FOREST = build_forest()


def predict_row(row):
    total = 0.0
    for feat, thr, leaves, n_nodes in FOREST:
        i = 0
        while i < n_nodes:
            i = 2 * i + (1 if row[feat[i]] <= thr[i] else 2)
        total += leaves[i - n_nodes]
    return total


def app(environ, start_response):
    size = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(size) or b"{}")
    rows = body.get("rows", [])
    scores = [predict_row(r) for r in rows]
    out = json.dumps({"scores": scores, "approve": [s > 0 for s in scores]}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", WORKERS)
        self.cfg.set("threads", THREADS)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("loglevel", "warning")

    def load(self):
        return app


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    Server().run()
