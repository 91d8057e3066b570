"""Fraud score endpoint: Flask under gunicorn sync workers, small torch tabular model."""
import os
import signal
import threading
import time

from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18409"))


def create_app():
    import torch
    from flask import Flask, jsonify, request

    torch.set_num_threads(1)
    torch.manual_seed(0)

    class Scorer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cat = torch.nn.EmbeddingBag(1000, 16, mode="sum")
            self.mlp = torch.nn.Sequential(torch.nn.Linear(16 + 24, 128), torch.nn.ReLU(),
                                           torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

        def forward(self, cats, nums):
            return torch.sigmoid(self.mlp(torch.cat([self.cat(cats), nums], dim=1)))

    model = Scorer().eval()
    app = Flask(__name__)

    @app.post("/score")
    def score():
        b = request.get_json()
        cats = torch.tensor([b["merchant"], b["country"], b["mcc"]]).view(1, -1) % 1000
        nums = torch.tensor(b["features"], dtype=torch.float32).view(1, -1)
        with torch.inference_mode():
            p = float(model(cats, nums)[0, 0])
        return jsonify({"txn": b["txn"], "fraud_p": round(p, 5), "review": p > 0.9})

    return app


class App(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 2)
        self.cfg.set("worker_class", "sync")
        self.cfg.set("timeout", 60)
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
