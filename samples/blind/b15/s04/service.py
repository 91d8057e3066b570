"""Ranking API: FastAPI async endpoints, onnxruntime model run in a thread pool executor."""
import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI
from onnx import TensorProto, helper, numpy_helper
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18804"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
POOL_SIZE = int(os.environ.get("SVC_POOL_SIZE", "8"))
ORT_THREADS = int(os.environ.get("SVC_ORT_THREADS", "8"))
D, H = 256, 1024

rng = np.random.default_rng(4)
item_emb = rng.standard_normal((50000, D)).astype(np.float32)


def build_session():
    inits, nodes, prev = [], [], "x"
    dims = [D, H, H, H]
    for i in range(3):
        w = numpy_helper.from_array((rng.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"b{i}")
        inits += [w, b]
        nodes.append(helper.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"g{i}"]))
        nodes.append(helper.make_node("Relu", [f"g{i}"], [f"r{i}"]))
        prev = f"r{i}"
    inits.append(numpy_helper.from_array(rng.standard_normal((H, 1)).astype(np.float32), "wo"))
    nodes.append(helper.make_node("MatMul", [prev, "wo"], ["y"]))
    graph = helper.make_graph(nodes, "ranker",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = ORT_THREADS
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])


session = build_session()
pool = ThreadPoolExecutor(max_workers=POOL_SIZE)
app = FastAPI()


class Request(BaseModel):
    candidates: list[int]


def run_model(cands):
    x = item_emb[np.asarray(cands) % len(item_emb)]
    s = session.run(None, {"x": x})[0][:, 0]
    return np.argsort(-s)[:10].tolist()


@app.post("/rank")
async def rank(req: Request):
    loop = asyncio.get_running_loop()
    top = await loop.run_in_executor(pool, run_model, req.candidates)
    return {"top": top}


@app.get("/health")
async def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    run_model(list(range(64)))
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
