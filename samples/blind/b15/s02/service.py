"""Image classification API: Flask, Pillow preprocessing, onnxruntime model."""
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
FAST_DECODE = os.environ.get("SVC_DRAFT_DECODE", "0") == "1"
SIZE = 224


def build_model():
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 3, 3, 3)).astype(np.float32) * 0.1, "w1")
    b1 = numpy_helper.from_array(np.zeros(32, np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.05, "w2")
    b2 = numpy_helper.from_array(np.zeros(32, np.float32), "b2")
    wf = numpy_helper.from_array(rng.standard_normal((32, 10)).astype(np.float32), "wf")
    bf = numpy_helper.from_array(np.zeros(10, np.float32), "bf")
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [w1, b1, w2, b2, wf, bf])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def build_gallery(n=6):
    rng = np.random.default_rng(2)
    out = []
    for i in range(n):
        y, x = np.mgrid[0:1200, 0:1600]
        base = np.stack([(x * (i + 1)) % 256, (y * 2 + i * 40) % 256, ((x + y) // 3) % 256], -1)
        noise = rng.integers(0, 40, base.shape)
        arr = np.clip(base + noise, 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


session = build_model()
gallery = build_gallery()
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)

app = Flask(__name__)


def load_image(data):
    img = Image.open(io.BytesIO(data))
    if FAST_DECODE:
        img.draft("RGB", (SIZE, SIZE))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    x = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return ((x - MEAN) / STD)[None]


@app.post("/classify")
def classify():
    body = request.get_json()
    data = gallery[int(body["image_id"]) % len(gallery)]
    x = load_image(data)
    logits = session.run(None, {"x": x})[0][0]
    return jsonify({"label": int(np.argmax(logits)), "score": float(np.max(logits))})


@app.get("/health")
def health():
    return jsonify(ok=True)


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    session.run(None, {"x": load_image(gallery[0])})
    threading.Thread(target=_expire, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
