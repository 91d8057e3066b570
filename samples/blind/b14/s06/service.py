"""Scoring consumer: reads jobs from stdin, runs an ONNX ranking model per job, logs completions."""
import asyncio
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ORT_THREADS = int(os.environ.get("SVC_ORT_THREADS", "8"))
WORKERS = 8
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")


def build_model(d_in=256, hidden=1024, d_out=64):
    rng = np.random.default_rng(2)
    dims = [d_in, hidden, hidden, d_out]
    nodes, inits = [], []
    x = "features"
    for i in range(3):
        w = numpy_helper.from_array((rng.standard_normal((dims[i], dims[i + 1])) * 0.05).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"b{i}")
        inits += [w, b]
        y = f"h{i}" if i < 2 else "logits"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y + ("_pre" if i < 2 else "")]))
        if i < 2:
            nodes.append(helper.make_node("Relu", [y + "_pre"], [y]))
        x = y
    graph = helper.make_graph(
        nodes, "ranker",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, d_in])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, d_out])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


MODEL_BYTES = build_model()
SEGMENTS = np.random.default_rng(4).standard_normal((128, 32, 256)).astype(np.float32)
_local = threading.local()


def session():
    s = getattr(_local, "sess", None)
    if s is None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = ORT_THREADS
        opts.inter_op_num_threads = 1
        s = ort.InferenceSession(MODEL_BYTES, opts, providers=["CPUExecutionProvider"])
        _local.sess = s
    return s


def score(job):
    feats = SEGMENTS[job["segment"] % len(SEGMENTS)]
    logits = session().run(None, {"features": feats})[0]
    return int(logits.max(1).argmax())


async def main():
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    # warm the per-thread sessions
    await asyncio.gather(*[loop.run_in_executor(pool, score, {"segment": i}) for i in range(WORKERS * 4)])
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    stats = open(STATS, "a", buffering=1 << 16)
    slots = asyncio.Semaphore(WORKERS * 2)
    deadline = time.time() + LIFETIME
    last_flush = [time.time()]

    async def handle(job, t0):
        try:
            await loop.run_in_executor(pool, score, job)
            now = time.time()
            stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
            if now - last_flush[0] > 0.3:
                stats.flush()
                last_flush[0] = now
        finally:
            slots.release()

    if READY:
        open(READY, "w").close()
    while time.time() < deadline:
        await slots.acquire()
        line = await reader.readline()
        if not line:
            break
        t0 = time.time()
        asyncio.ensure_future(handle(json.loads(line), t0))
    stats.flush()
    os._exit(0)


asyncio.run(main())
