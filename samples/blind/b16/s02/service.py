"""Photo classification endpoint: accepts a JPEG upload and returns class scores from an ONNX CNN."""
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

PORT = int(os.environ.get("SVC_PORT", "18802"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
FAST_DECODE = os.environ.get("SVC_JPEG_DRAFT", "0") == "1"
SIDE = 224
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def build_model(path):
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array((rng.standard_normal((64, 3, 5, 5)) * 0.1).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((128, 64, 3, 3)) * 0.1).astype(np.float32), "w2")
    fc = numpy_helper.from_array((rng.standard_normal((128, 10)) * 0.1).astype(np.float32), "fc")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], strides=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "fc"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "classifier",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIDE, SIDE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              initializer=[w1, w2, fc])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


MODEL_PATH = f"/tmp/b16-s02-{os.getpid()}.onnx"
build_model(MODEL_PATH)
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
opts.inter_op_num_threads = 1
session = ort.InferenceSession(MODEL_PATH, opts, providers=["CPUExecutionProvider"])
os.unlink(MODEL_PATH)
app = Flask(__name__)


def load_image(data):
    img = Image.open(io.BytesIO(data))
    if FAST_DECODE:
        img.draft("RGB", (SIDE, SIDE))
    img = img.convert("RGB")
    img = img.resize((SIDE, SIDE), Image.LANCZOS)
    arr = (np.asarray(img, dtype=np.float32) / 255.0 - MEAN) / STD
    return arr.transpose(2, 0, 1)[None].copy()


@app.post("/classify")
def classify():
    x = load_image(request.get_data())
    y = session.run(None, {"x": x})[0][0]
    return jsonify({"label": int(np.argmax(y)), "scores": y.round(4).tolist()})


@app.get("/health")
def health():
    return jsonify({"ok": True})


def _stop():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
