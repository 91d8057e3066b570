"""Image classification service (Flask)."""
import io
import os
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
from flask import Flask, jsonify, request
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
DECODE = os.environ.get("SVC_DECODE", "full")
SIDE = 224

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def build_model():
    rng = np.random.default_rng(0)

    def init(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    inits = [init("w1", (24, 3, 3, 3)), init("b1", (24,)), init("w2", (48, 24, 3, 3)), init("b2", (48,)),
             init("w3", (64, 48, 3, 3)), init("b3", (64,)), init("fc", (64, 100)), init("fcb", (100,))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "classifier",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIDE, SIDE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


session = build_model()
app = Flask(__name__)


def load_image(data):
    img = Image.open(io.BytesIO(data))
    if DECODE == "draft":
        img.draft("RGB", (SIDE, SIDE))
    img = img.convert("RGB")
    img = img.resize((SIDE, SIDE), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return ((arr - MEAN) / STD)[None]


@app.route("/predict", methods=["POST"])
def predict():
    x = load_image(request.get_data())
    logits = session.run(None, {"x": x})[0][0]
    top = np.argsort(logits)[-5:][::-1]
    return jsonify({"top5": top.tolist(), "score": float(logits[top[0]])})


@app.route("/health")
def health():
    return "ok"


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
