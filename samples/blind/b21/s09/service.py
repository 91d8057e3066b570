"""Session-feature projection API: Flask app under gunicorn gthread workers, torch linear projection."""
import os
import signal
import threading
import time

import torch
from flask import Flask, jsonify, request

PORT = int(os.environ.get("SVC_PORT", "18809"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
WORKSPACE = os.environ.get("SVC_WORKSPACE", "per_request")
MAX_ROWS, WIDTH = 1024, 16384

torch.set_num_threads(1)
torch.manual_seed(0)
proj = torch.randn(WIDTH, 64) * 0.01
_local = threading.local()


def workspace():
    if WORKSPACE == "per_request":
        return torch.zeros(MAX_ROWS, WIDTH)
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = torch.empty(MAX_ROWS, WIDTH)
    buf.zero_()
    return buf


app = Flask(__name__)


@app.route("/project", methods=["POST"])
def predict():
    body = request.get_json()
    events = body["events"]
    ws = workspace()
    n = min(len(events), MAX_ROWS)
    for i, (col, val) in enumerate(events[:n]):
        ws[i, col % WIDTH] = val
    out = ws[:n] @ proj
    emb = out.mean(0)
    return jsonify({"n": n, "emb": [round(float(v), 4) for v in emb[:8]]})


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
            self.cfg.set("worker_class", "gthread")
            self.cfg.set("threads", 4)
            self.cfg.set("timeout", 60)
            self.cfg.set("graceful_timeout", 3)
            self.cfg.set("loglevel", "warning")
            self.cfg.set("when_ready", when_ready)

        def load(self):
            return app

    Server().run()


if __name__ == "__main__":
    main()
