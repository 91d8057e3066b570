"""Churn prediction API (Flask under gunicorn gthread workers): looks up customer feature rows and scores them with an ONNX MLP."""
import os

import numpy as np
import onnxruntime as ort
from flask import Flask, jsonify, request
from onnx import TensorProto, helper, numpy_helper

FEATURES, HIDDEN = 256, 2048


def build_model():
    rng = np.random.default_rng(8)
    inits, nodes, prev = [], [], "x"
    dims = [FEATURES, HIDDEN, HIDDEN, HIDDEN, 1]
    for i in range(4):
        inits.append(numpy_helper.from_array((rng.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
        if i < 3:
            nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
            prev = f"r{i}"
    nodes.append(helper.make_node("Sigmoid", [prev], ["p"]))
    g = helper.make_graph(nodes, "churn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, FEATURES])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 1])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


session = build_model()
CUSTOMERS = np.random.default_rng(9).random((50_000, FEATURES), dtype=np.float32)
app = Flask(__name__)


@app.post("/churn")
def churn():
    ids = np.asarray(request.get_json()["customer_ids"], dtype=np.int64) % len(CUSTOMERS)
    rows = CUSTOMERS[ids]
    p = session.run(None, {"x": rows})[0][:, 0]
    return jsonify({"p": p.round(4).tolist()})


@app.get("/health")
def health():
    return jsonify({"ok": True})
