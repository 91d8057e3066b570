"""Batch scoring worker: a thread pool runs an ONNX ranking model; in-process clients submit requests."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
INTRA = int(os.environ.get("SVC_INTRA_THREADS", "4"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
DIM, HID, BATCH = 256, 512, 64


def build_model_bytes():
    rng = np.random.default_rng(5)
    inits, nodes = [], []
    prev, width = "x", DIM
    for i in range(4):
        w = (rng.standard_normal((width, HID)) * 0.05).astype(np.float32)
        inits.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, w.shape, w.flatten()))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"]))
        prev, width = f"r{i}", HID
    wo = (rng.standard_normal((HID, 1)) * 0.05).astype(np.float32)
    inits.append(helper.make_tensor("wo", TensorProto.FLOAT, wo.shape, wo.flatten()))
    nodes.append(helper.make_node("MatMul", [prev, "wo"], ["y"]))
    graph = helper.make_graph(nodes, "ranker",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, DIM])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


MODEL = build_model_bytes()
_local = threading.local()


def session():
    s = getattr(_local, "sess", None)
    if s is None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = INTRA
        opts.inter_op_num_threads = 1
        s = ort.InferenceSession(MODEL, opts, providers=["CPUExecutionProvider"])
        _local.sess = s
    return s


def score(batch):
    out = session().run(None, {"x": batch})[0]
    return int(np.argmax(out))


def client(pool, rng, out, stop):
    while not stop.is_set():
        batch = rng.standard_normal((BATCH, DIM)).astype(np.float32)
        t = time.time()
        pool.submit(score, batch).result()
        now = time.time()
        out.append(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")


def main():
    stop = threading.Event()
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    warm = np.zeros((BATCH, DIM), np.float32)
    list(pool.map(score, [warm] * (WORKERS * 4)))
    buffers = [[] for _ in range(CLIENTS)]
    threads = [threading.Thread(target=client, args=(pool, np.random.default_rng(i), buffers[i], stop), daemon=True)
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    with open(STATS, "a") as f:
        while True:
            time.sleep(0.25)
            for b in buffers:
                n = len(b)
                if n:
                    f.writelines(b[:n])
                    del b[:n]
            f.flush()


if __name__ == "__main__":
    main()
