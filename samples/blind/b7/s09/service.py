"""Lead-scoring API: FastAPI async handlers + onnxruntime MLP (graph built from a config at start-up)."""
import json
import os
import signal
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI
from onnx import TensorProto, helper, numpy_helper
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18591"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
DIMS = [24, 128, 64, 4]
SEGMENTS = ["cold", "warm", "hot", "existing"]


def build_model():
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    prev = "x"
    for i, (a, b) in enumerate(zip(DIMS[:-1], DIMS[1:])):
        inits.append(numpy_helper.from_array((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), f"W{i}"))
        inits.append(numpy_helper.from_array(np.zeros(b, np.float32), f"b{i}"))
        nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"b{i}"], [f"g{i}"]))
        if i < len(DIMS) - 2:
            nodes.append(helper.make_node("Relu", [f"g{i}"], [f"r{i}"]))
            prev = f"r{i}"
        else:
            prev = f"g{i}"
    nodes.append(helper.make_node("Softmax", [prev], ["probs"], axis=1))
    g = helper.make_graph(nodes, "leadscore", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, DIMS[0]])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [None, DIMS[-1]])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


so = ort.SessionOptions()
so.intra_op_num_threads = 1
sess = ort.InferenceSession(build_model(), so, providers=["CPUExecutionProvider"])
app = FastAPI()
served = [0]
t0 = time.time()


class Lead(BaseModel):
    lead_id: str
    signals: list[float]


@app.post("/score")
async def score(lead: Lead):
    x = np.zeros((1, DIMS[0]), np.float32)
    s = np.asarray(lead.signals[: DIMS[0]], np.float32)
    x[0, : len(s)] = s
    p = sess.run(["probs"], {"x": x})[0][0]
    served[0] += 1
    return {"lead_id": lead.lead_id, "segment": SEGMENTS[int(p.argmax())], "p": [round(float(v), 4) for v in p]}


def _exit(*_):
    print(json.dumps({"served": served[0], "uptime_s": round(time.time() - t0, 1)}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    threading.Timer(LIFETIME, _exit).start()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False))
    server.install_signal_handlers = lambda: None
    signal.signal(signal.SIGTERM, _exit)
    server.run()
