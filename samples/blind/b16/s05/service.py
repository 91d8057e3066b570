"""Item tagging API: looks up item feature rows and scores 8 tags with an ONNX MLP, served by two uvicorn workers."""
import os
import signal
import threading

import numpy as np
import onnxruntime as ort
from fastapi import FastAPI
from onnx import TensorProto, helper, numpy_helper
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18805"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
INTRA_OP = int(os.environ.get("SVC_INTRA_OP_THREADS", "8"))
FEATURES, HIDDEN, TAGS = 256, 1024, 8


def build_session():
    rng = np.random.default_rng(0)
    dims = [FEATURES, HIDDEN, HIDDEN, HIDDEN, TAGS]
    inits, nodes, prev = [], [], "x"
    for i in range(4):
        w = (rng.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
        if i < 3:
            nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
            prev = f"r{i}"
    nodes.append(helper.make_node("Sigmoid", [prev], ["p"]))
    g = helper.make_graph(nodes, "tagger", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, FEATURES])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, TAGS])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = INTRA_OP
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


session = build_session()
ITEMS = np.random.default_rng(1).random((20_000, FEATURES), dtype=np.float32)
app = FastAPI()


class Batch(BaseModel):
    item_ids: list[int]


@app.post("/tags")
def tags(b: Batch):
    x = ITEMS[np.asarray(b.item_ids, dtype=np.int64) % len(ITEMS)]
    p = session.run(None, {"x": x})[0]
    return {"tags": (p > 0.5).sum(1).tolist()}


@app.get("/health")
def health():
    return {"ok": True}


session.run(None, {"x": ITEMS[:16]})

if __name__ == "__main__":
    import uvicorn
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning", access_log=False)
