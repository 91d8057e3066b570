"""Churn prediction API (uvicorn with 2 worker processes, ONNX Runtime MLP)."""
import os
import signal
import threading

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI
from onnx import TensorProto, helper, numpy_helper
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18807"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
INTRA = int(os.environ.get("SVC_INTRA_THREADS", "8"))
N_CUSTOMERS, N_FEAT = 50000, 128


def build_model():
    rng = np.random.default_rng(0)
    dims = [N_FEAT, 1024, 1024, 512, 1]
    nodes, inits, cur = [], [], "x"
    for i in range(4):
        inits += [numpy_helper.from_array((rng.standard_normal((dims[i], dims[i + 1])) * 0.03).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"b{i}")]
        nodes.append(helper.make_node("Gemm", [cur, f"w{i}", f"b{i}"], [f"h{i}"]))
        cur = f"h{i}"
        if i < 3:
            nodes.append(helper.make_node("Relu", [cur], [f"r{i}"]))
            cur = f"r{i}"
    nodes.append(helper.make_node("Sigmoid", [cur], ["p"]))
    g = helper.make_graph(nodes, "churn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, N_FEAT])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


FEATURES = np.random.default_rng(1).standard_normal((N_CUSTOMERS, N_FEAT)).astype(np.float32)
opts = ort.SessionOptions()
opts.intra_op_num_threads = INTRA
opts.inter_op_num_threads = 1
session = ort.InferenceSession(build_model(), opts, providers=["CPUExecutionProvider"])


class Batch(BaseModel):
    customer_ids: list[int]


app = FastAPI()


@app.post("/predict")
def predict(b: Batch):
    x = FEATURES[np.asarray(b.customer_ids) % N_CUSTOMERS]
    p = session.run(["p"], {"x": x})[0][:, 0]
    return {"churn": np.round(p, 4).tolist()}


def main():
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")


if __name__ == "__main__":
    main()
