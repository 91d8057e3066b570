"""Ranking service: gunicorn (sync workers) serving a small ONNX scorer."""
import json
import os
import signal
import threading

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18804"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
DIM = 64


def build_model():
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((DIM, 256)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((256, 32)).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("MatMul", ["hr", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "scorer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, DIM])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 32])],
        [helper.make_tensor("w1", TensorProto.FLOAT, w1.shape, w1.flatten()),
         helper.make_tensor("w2", TensorProto.FLOAT, w2.shape, w2.flatten())],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


_session = None


def app(environ, start_response):
    global _session
    if _session is None:
        _session = build_model()
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b"{}"
    req = json.loads(body or b"{}")
    feats = np.asarray(req.get("features", [[0.0] * DIM]), dtype=np.float32).reshape(-1, DIM)
    out = _session.run(None, {"x": feats})[0]
    top = np.argsort(-out, axis=1)[:, :5].tolist()
    data = json.dumps({"top": top}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


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
    stopper = threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM))
    stopper.daemon = True
    stopper.start()
    Server(app, {"bind": f"127.0.0.1:{PORT}", "workers": 2, "worker_class": "sync",
                 "timeout": 30, "loglevel": "warning"}).run()
