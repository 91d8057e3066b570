"""Candidate ranker: Flask app served by gunicorn (gthread), MLP scorer on onnxruntime.

Env:
  SVC_PORT          listen port (default 18302)
  SVC_THREADS       gunicorn threads per worker (default 8)
  SVC_ORT_THREADS   onnxruntime intra-op threads (default 16)
"""
import os
import zlib

import numpy as np
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18302"))
THREADS = int(os.environ.get("SVC_THREADS", "8"))
ORT_THREADS = int(os.environ.get("SVC_ORT_THREADS", "16"))
HERE = os.path.dirname(os.path.abspath(__file__))

N_ITEMS = 50000
ITEM_DIM = 256
USER_DIM = 64
CROSS_DIM = 64


def export_model(path):
    import torch

    torch.manual_seed(3)

    class Ranker(torch.nn.Module):
        def __init__(self, d_in):
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(d_in, 1024), torch.nn.ReLU(),
                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                torch.nn.Linear(1024, 1),
            )

        def forward(self, x):
            return self.net(x).squeeze(-1)

    model = Ranker(ITEM_DIM + USER_DIM + CROSS_DIM).eval()
    torch.onnx.export(model, (torch.randn(1, ITEM_DIM + USER_DIM + CROSS_DIM),), path + ".tmp", dynamo=False,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    os.replace(path + ".tmp", path)


def build_app():
    import onnxruntime as ort
    from flask import Flask, jsonify, request

    rng = np.random.default_rng(3)
    items = rng.standard_normal((N_ITEMS, ITEM_DIM), dtype=np.float32)
    cats = rng.integers(0, 40, size=N_ITEMS)

    path = os.path.join(HERE, "ranker.onnx")
    if not os.path.exists(path):
        export_model(path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = ORT_THREADS
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    def crosses(user, cand_ids):
        # hashed categorical crosses (user segment x item category x hour)
        out = np.zeros((len(cand_ids), CROSS_DIM), dtype=np.float32)
        seg = user.get("segment", "none")
        hour = int(user.get("hour", 0))
        for i, cid in enumerate(cand_ids):
            c = int(cats[cid])
            for key in (f"{seg}|{c}", f"{hour}|{c}"):
                out[i, zlib.crc32(key.encode()) % CROSS_DIM] += 1.0
        return out

    app = Flask(__name__)

    @app.get("/health")
    def health():
        return {"ok": True}

    @app.post("/rank")
    def rank():
        body = request.get_json()
        cand = np.asarray(body["candidates"], dtype=np.int64) % N_ITEMS
        u = np.asarray(body["user"]["vec"], dtype=np.float32)
        feats = np.concatenate([items[cand], np.broadcast_to(u, (len(cand), USER_DIM)),
                                crosses(body["user"], cand.tolist())], axis=1)
        scores = sess.run(None, {"x": feats})[0]
        order = np.argsort(-scores)[:20]
        return jsonify({"items": cand[order].tolist(), "scores": scores[order].round(4).tolist()})

    return app


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 1)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", THREADS)
        self.cfg.set("timeout", 120)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return build_app()


if __name__ == "__main__":
    Server().run()
