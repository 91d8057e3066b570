"""Image tagging service: Flask endpoint, Pillow input pipeline, ONNX Runtime classifier."""
import io
import os
import signal
import threading

import numpy as np
import onnx
import onnxruntime as ort
from flask import Flask, jsonify, request
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18852"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
FAST_DECODE = os.environ.get("SVC_FAST_DECODE", "0") == "1"
SIZE = 224
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def build_model():
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array((rng.standard_normal((16, 3, 3, 3)) * 0.1).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((64, 16, 3, 3)) * 0.1).astype(np.float32), "w2")
    w3 = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32), "w3")
    fc = numpy_helper.from_array((rng.standard_normal((64, 10)) * 0.1).astype(np.float32), "fc")
    fb = numpy_helper.from_array(np.zeros(10, np.float32), "fb")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[1, 1], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], strides=[1, 1], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "tagger",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [w1, w2, w3, fc, fb])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


session = build_model()
app = Flask(__name__)


def load_image(data):
    img = Image.open(io.BytesIO(data))
    if FAST_DECODE:
        img.draft("RGB", (SIZE * 2, SIZE * 2))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR, reducing_gap=2.0)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr = (arr - MEAN) / STD
    return arr.transpose(2, 0, 1)[None].copy()


@app.post("/tag")
def tag():
    x = load_image(request.get_data())
    y = session.run(None, {"x": x})[0][0]
    top = np.argsort(-y)[:3]
    return jsonify({"tags": top.tolist(), "scores": y[top].tolist()})


@app.get("/health")
def health():
    return jsonify(ok=True)


if __name__ == "__main__":
    t = threading.Timer(LIFETIME, lambda: os._exit(0))
    t.daemon = True
    t.start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
