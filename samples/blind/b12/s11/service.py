"""Query-intent classifier worker: asyncio clients feed an ONNX MLP via a thread executor.

A background compaction job for the local index runs alongside it as child processes.
"""
import asyncio
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
COMPACTION_JOBS = int(os.environ.get("SVC_COMPACTION_JOBS", "2"))
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "6"))
HERE = os.path.dirname(os.path.abspath(__file__))


def build_session(d=256, h=1536, classes=32):
    rng = np.random.default_rng(0)

    def t(name, shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape, (rng.normal(size=shape) / np.sqrt(shape[0])).astype(np.float32).ravel())

    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["h2"]), helper.make_node("Relu", ["h2"], ["r2"]),
             helper.make_node("MatMul", ["r2", "w3"], ["z"]), helper.make_node("Softmax", ["z"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "intent", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, classes])],
                          [t("w1", [d, h]), t("w2", [h, h]), t("w3", [h, classes])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


async def main():
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1 << 16)
    sess = build_session()
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    loop = asyncio.get_running_loop()
    jobs = [subprocess.Popen([sys.executable, os.path.join(HERE, "compactor.py"), str(LIFETIME + 5)])
            for _ in range(COMPACTION_JOBS)]
    deadline = time.time() + LIFETIME
    last = [time.time()]

    def classify(x):
        return sess.run(None, {"x": x})[0].argmax(1)

    async def client(seed):
        rng = np.random.default_rng(seed)
        while time.time() < deadline:
            x = rng.normal(size=(64, 256)).astype(np.float32)
            t0 = time.time()
            await loop.run_in_executor(pool, classify, x)
            now = time.time()
            stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
            if now - last[0] > 0.3:
                stats.flush()
                last[0] = now

    await loop.run_in_executor(pool, classify, np.zeros((64, 256), np.float32))
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    await asyncio.gather(*(client(i) for i in range(CLIENTS)))
    stats.flush()
    for j in jobs:
        j.terminate()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
