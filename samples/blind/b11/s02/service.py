"""Image classification service: load a stored photo, prepare a 224x224 tensor, run an ONNX classifier."""
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
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
FAST_LOAD = os.environ.get("SVC_DRAFT", "0") == "1"
RESAMPLE = Image.BILINEAR if os.environ.get("SVC_RESAMPLE", "lanczos") == "bilinear" else Image.LANCZOS


def build_model():
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 3, 3, 3)).astype(np.float32) * 0.1, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.1, "w2")
    fc = numpy_helper.from_array(rng.standard_normal((32, 10)).astype(np.float32) * 0.1, "fc")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "fc"], ["y"]),
    ]
    g = helper.make_graph(nodes, "cls",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                          initializer=[w1, w2, fc])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def make_photos(n=16):
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        base = rng.integers(0, 255, (75, 100, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((1600, 1200), Image.BICUBIC)
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


session = build_model()
photos = make_photos()
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
app = Flask(__name__)


def load_image(data):
    img = Image.open(io.BytesIO(data))
    if FAST_LOAD:
        img.draft("RGB", (448, 448))
    img = img.convert("RGB").resize((224, 224), RESAMPLE)
    a = (np.asarray(img, dtype=np.float32) / 255.0 - MEAN) / STD
    return a.transpose(2, 0, 1)[None].copy()


@app.post("/classify")
def classify():
    body = request.get_json()
    x = load_image(photos[int(body["image"]) % len(photos)])
    y = session.run(None, {"x": x})[0][0]
    return jsonify({"label": int(y.argmax()), "score": float(y.max())})


def _stop_later():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop_later, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
