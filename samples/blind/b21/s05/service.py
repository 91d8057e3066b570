"""Fraud scoring worker pool: in-process clients submit transaction batches to a thread pool of ONNX scorers."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
INTRA = int(os.environ.get("SVC_INTRA_THREADS", "4"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s05-records.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s05-ready")
FEATURES = 512


def build_model_bytes():
    rng = np.random.default_rng(0)
    shapes = [(FEATURES, 1024), (1024, 1024), (1024, 16)]
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.05).astype(np.float32), f"w{i}")
             for i, s in enumerate(shapes)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["h0"]), helper.make_node("Relu", ["h0"], ["r0"]),
             helper.make_node("MatMul", ["r0", "w1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "scorer",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, FEATURES])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


MODEL_BYTES = build_model_bytes()
_local = threading.local()


def session():
    s = getattr(_local, "session", None)
    if s is None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = INTRA
        opts.inter_op_num_threads = 1
        s = ort.InferenceSession(MODEL_BYTES, opts, providers=["CPUExecutionProvider"])
        _local.session = s
    return s


def score(batch):
    out = session().run(None, {"x": batch})[0]
    return out.max(axis=1)


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1 << 16)
        self.lock = threading.Lock()
        self.last = time.time()

    def add(self, t0, t1):
        with self.lock:
            self.f.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
            if t1 - self.last > 0.3:
                self.f.flush()
                self.last = t1


def client(pool, rec, seed, stop):
    rng = np.random.default_rng(seed)
    batches = [rng.standard_normal((16, FEATURES)).astype(np.float32) for _ in range(8)]
    i = 0
    while time.time() < stop:
        t0 = time.time()
        pool.submit(score, batches[i % 8]).result()
        rec.add(t0, time.time())
        i += 1


def main():
    stop = time.time() + LIFETIME
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    list(pool.map(score, [np.zeros((1, FEATURES), np.float32)] * (WORKERS * 2)))
    rec = Recorder(STATS)
    open(READY, "w").close()
    threads = [threading.Thread(target=client, args=(pool, rec, i, stop), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.f.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
