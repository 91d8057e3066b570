"""Fraud risk scoring API (gunicorn gthread + Flask, ONNX Runtime MLP)."""
import os
import signal
import threading

import numpy as np
import onnx
import onnxruntime as ort
from flask import Flask, jsonify, request
from gunicorn.app.base import BaseApplication
from onnx import TensorProto, helper, numpy_helper

PORT = int(os.environ.get("SVC_PORT", "18805"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


def build_model():
    rng = np.random.default_rng(5)
    dims = [48, 128, 128, 2]
    nodes, inits = [], []
    cur = "features"
    for i in range(3):
        w = numpy_helper.from_array((rng.standard_normal((dims[i], dims[i + 1])) * 0.1).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"b{i}")
        inits += [w, b]
        nodes.append(helper.make_node("Gemm", [cur, f"w{i}", f"b{i}"], [f"g{i}"]))
        cur = f"g{i}"
        if i < 2:
            nodes.append(helper.make_node("Relu", [cur], [f"r{i}"]))
            cur = f"r{i}"
    nodes.append(helper.make_node("Softmax", [cur], ["prob"], axis=1))
    graph = helper.make_graph(nodes, "risk",
                              [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, 48])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [None, 2])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
opts.inter_op_num_threads = 1
session = ort.InferenceSession(build_model(), opts, providers=["CPUExecutionProvider"])

app = Flask(__name__)


@app.post("/score")
def score():
    tx = request.get_json()
    x = np.asarray(tx["features"], dtype=np.float32).reshape(1, 48)
    p = session.run(["prob"], {"features": x})[0][0]
    return jsonify({"risk": float(p[1]), "flag": bool(p[1] > 0.9)})


def _stop_later(server):
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()


class Server(BaseApplication):
    def load_config(self):
        for k, v in {"bind": f"127.0.0.1:{PORT}", "workers": 1, "threads": 4, "worker_class": "gthread",
                     "timeout": 60, "graceful_timeout": 3, "loglevel": "warning",
                     "when_ready": _stop_later}.items():
            self.cfg.set(k, v)

    def load(self):
        return app


if __name__ == "__main__":
    Server().run()
