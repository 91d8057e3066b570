"""Image tagging API: accepts a JPEG upload and returns class scores."""
import io
import os
import signal
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
from fastapi import FastAPI, Request
from onnx import TensorProto, helper
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18802"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
FAST_DECODE = os.environ.get("SVC_DRAFT_DECODE", "0") == "1"
SIZE = 224
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def build_model():
    rng = np.random.default_rng(0)
    w1 = helper.make_tensor("w1", TensorProto.FLOAT, [16, 3, 4, 4], rng.standard_normal(16 * 3 * 16).astype(np.float32).tolist())
    w2 = helper.make_tensor("w2", TensorProto.FLOAT, [16, 20], rng.standard_normal(320).astype(np.float32).tolist())
    b2 = helper.make_tensor("b2", TensorProto.FLOAT, [20], np.zeros(20, np.float32).tolist())
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], strides=[4, 4]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("GlobalAveragePool", ["r1"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "tagger",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 20])],
                              initializer=[w1, w2, b2])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


sess = build_model()
app = FastAPI()


def load_image(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    if FAST_DECODE:
        img.draft("RGB", (SIZE * 2, SIZE * 2))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR, reducing_gap=2.0)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return ((arr - MEAN) / STD)[None]


@app.post("/tag")
async def tag(request: Request):
    data = await request.body()
    x = load_image(data)
    y = sess.run(None, {"x": x})[0][0]
    top = np.argsort(y)[-3:][::-1]
    return {"top": [int(i) for i in top], "scores": [float(y[i]) for i in top]}


def _stop(pid):
    time.sleep(LIFETIME)
    os.kill(pid, signal.SIGTERM)
    time.sleep(5)
    os._exit(0)


if __name__ == "__main__":
    import uvicorn
    threading.Thread(target=_stop, args=(os.getpid(),), daemon=True).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")
