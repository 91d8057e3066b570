"""Review sentiment consumer: reads JSON documents from stdin, extracts features, scores them with ONNX."""
import asyncio
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

from features import BUCKETS, featurize

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
EXECUTOR = os.environ.get("SVC_EXECUTOR", "thread")
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
INFLIGHT = int(os.environ.get("SVC_INFLIGHT", "8"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")

if EXECUTOR == "process":
    pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("fork"))
else:
    pool = ThreadPoolExecutor(max_workers=WORKERS)

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def build_session():
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((BUCKETS, 64)).astype(np.float32) * 0.03, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 3)).astype(np.float32) * 0.1, "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["l"]), helper.make_node("Softmax", ["l"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "senti", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, BUCKETS])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], initializer=[w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


session = build_session()
out = open(STATS, "a", buffering=1 << 16)
last_flush = [time.time()]


async def handle(loop, line, sem):
    try:
        t = time.time()
        doc = json.loads(line)
        counts = await loop.run_in_executor(pool, featurize, doc["text"])
        x = np.log1p(np.asarray(counts, np.float32))[None]
        session.run(None, {"x": x})
        e = time.time()
        out.write(f"{e:.4f} {(e - t) * 1000:.3f} ok\n")
        if e - last_flush[0] > 0.3:
            out.flush()
            last_flush[0] = e
    finally:
        sem.release()


async def main():
    loop = asyncio.get_running_loop()
    deadline = time.time() + LIFETIME
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await loop.run_in_executor(pool, featurize, "warm up")
    if READY:
        open(READY, "w").close()
    sem = asyncio.Semaphore(INFLIGHT)
    tasks = set()
    while time.time() < deadline:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout=1.0)
        except asyncio.TimeoutError:
            continue
        if not line:
            break
        await sem.acquire()
        tk = asyncio.create_task(handle(loop, line, sem))
        tasks.add(tk)
        tk.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks, timeout=5)
    out.flush()


if __name__ == "__main__":
    asyncio.run(main())
    pool.shutdown(wait=False, cancel_futures=True)
    os._exit(0)
