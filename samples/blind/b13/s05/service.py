"""Asynchronous scoring consumer: an asyncio loop dispatches batches to executor threads running an ONNX model."""
import asyncio
import concurrent.futures as cf
import os
import random
import threading
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
ORT_THREADS = int(os.environ.get("SVC_ORT_THREADS", "8"))
EXEC_THREADS = int(os.environ.get("SVC_EXEC_THREADS", "4"))
INFLIGHT = int(os.environ.get("SVC_INFLIGHT", "8"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s05-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s05-ready")

def build_scorer():
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i, (n_in, n_out) in enumerate([(256, 512), (512, 512), (512, 512), (512, 512)]):
        w = (rng.standard_normal(n_in * n_out) / 20).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, [n_in, n_out], w.tolist()))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"]))
        prev = f"r{i}"
    inits.append(helper.make_tensor("wo", TensorProto.FLOAT, [512, 1], (rng.standard_normal(512) / 20).astype(np.float32).tolist()))
    nodes.append(helper.make_node("MatMul", [prev, "wo"], ["z"]))
    nodes.append(helper.make_node("Sigmoid", ["z"], ["y"]))
    g = helper.make_graph(nodes, "scorer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = ORT_THREADS
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


session = build_scorer()
_rng = np.random.default_rng(1)
INPUTS = [_rng.standard_normal((32, 256)).astype(np.float32) for _ in range(16)]


def run_batch(x):
    return float(session.run(None, {"x": x})[0].mean())


async def worker(loop, pool, out, stop_at, seed):
    rng = random.Random(seed)
    while time.time() < stop_at:
        x = INPUTS[rng.randrange(len(INPUTS))]
        t = time.perf_counter()
        await loop.run_in_executor(pool, run_batch, x)
        out.append(f"{time.time():.4f} {(time.perf_counter() - t) * 1000:.3f} ok\n")


async def flusher(out, stop_at):
    with open(STATS, "a") as f:
        while time.time() < stop_at + 1:
            await asyncio.sleep(0.3)
            batch = out[:]
            del out[:len(batch)]
            f.writelines(batch)
            f.flush()


async def main():
    stop_at = time.time() + LIFETIME
    loop = asyncio.get_running_loop()
    pool = cf.ThreadPoolExecutor(EXEC_THREADS, thread_name_prefix="score")
    for _ in range(EXEC_THREADS * 4):
        await loop.run_in_executor(pool, run_batch, INPUTS[0])
    out = []
    open(READY, "w").close()
    tasks = [asyncio.create_task(worker(loop, pool, out, stop_at, s)) for s in range(INFLIGHT)]
    fl = asyncio.create_task(flusher(out, stop_at))
    await asyncio.gather(*tasks)
    await fl
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
