"""Batch embedding worker: in-process clients submit jobs to a thread pool that runs an ONNX Runtime encoder."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "6"))
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
PER_THREAD = os.environ.get("SVC_PER_THREAD_SESSION", "0") == "1"
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")


def build_encoder():
    rng = np.random.default_rng(2)
    dims = [512, 1024, 1024, 256]
    nodes, inits, cur = [], [], "x"
    for i in range(3):
        inits += [numpy_helper.from_array((rng.standard_normal((dims[i], dims[i + 1])) * 0.03).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(dims[i + 1], np.float32), f"b{i}")]
        nodes.append(helper.make_node("Gemm", [cur, f"w{i}", f"b{i}"], [f"h{i}"]))
        cur = f"h{i}"
        if i < 2:
            nodes.append(helper.make_node("Tanh", [cur], [f"a{i}"]))
            cur = f"a{i}"
    nodes.append(helper.make_node("LpNormalization", [cur], ["emb"], axis=1, p=2))
    g = helper.make_graph(nodes, "enc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 512])],
                          [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [None, 256])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


MODEL = build_encoder()


def new_session():
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    return ort.InferenceSession(MODEL, o, providers=["CPUExecutionProvider"])


class Encoder:
    def __init__(self):
        self._session = new_session()
        self._lock = threading.Lock()
        self._local = threading.local()

    def _own_session(self):
        s = getattr(self._local, "s", None)
        if s is None:
            s = self._local.s = new_session()
        return s

    def encode(self, batch):
        x = np.ascontiguousarray(batch, dtype=np.float32)
        if PER_THREAD:
            return self._own_session().run(["emb"], {"x": x})[0]
        with self._lock:
            return self._session.run(["emb"], {"x": x})[0]


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a")
        self.lines = []
        self.mu = threading.Lock()

    def add(self, t_end, ms):
        with self.mu:
            self.lines.append(f"{t_end:.4f} {ms:.3f} ok\n")

    def flush(self):
        with self.mu:
            lines, self.lines = self.lines, []
        self.f.writelines(lines)
        self.f.flush()


def main():
    enc = Encoder()
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    rec = Recorder(STATS)
    stop = time.time() + LIFETIME
    for _ in range(WORKERS):
        pool.submit(enc.encode, np.zeros((64, 512), np.float32)).result()

    def client(seed):
        rng = np.random.default_rng(seed)
        docs = [rng.standard_normal((64, 512)).astype(np.float32) for _ in range(8)]
        i = 0
        while time.time() < stop:
            t = time.perf_counter()
            emb = pool.submit(enc.encode, docs[i % 8]).result()
            _ = emb[:, :8].sum()
            rec.add(time.time(), (time.perf_counter() - t) * 1000)
            i += 1

    threads = [threading.Thread(target=client, args=(s,), daemon=True) for s in range(CLIENTS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    while time.time() < stop:
        time.sleep(0.3)
        rec.flush()
    for t in threads:
        t.join(2)
    rec.flush()
    pool.shutdown(wait=False, cancel_futures=True)


if __name__ == "__main__":
    main()
