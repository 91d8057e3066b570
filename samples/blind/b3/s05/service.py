"""Inference service."""
import argparse
import json
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort

import model

HERE = os.path.dirname(os.path.abspath(__file__))
INTRA = int(os.environ.get("SVC_INTRA", "4"))
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))
DIM = 512

_word = re.compile(r"[a-z0-9]+")
_local = threading.local()


def session():
    s = getattr(_local, "sess", None)
    if s is None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = INTRA
        s = ort.InferenceSession(os.path.join(HERE, "scorer.onnx"), opts, providers=["CPUExecutionProvider"])
        _local.sess = s
    return s


def features(texts):
    x = np.zeros((len(texts), DIM), np.float32)
    for r, t in enumerate(texts):
        for w in _word.findall(t.lower()):
            x[r, hash(w) % DIM] += 1.0
    return x / np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))


def handle(texts):
    logits = session().run(None, {"x": features(texts)})[0]
    return logits.argmax(1).tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=0)
    a = ap.parse_args()
    model.build(os.path.join(HERE, "scorer.onnx"))
    words = "order delivery refund late broken item support account login error payment card".split()
    docs = [" ".join(random.Random(i).choice(words) for _ in range(60)) for i in range(64)]
    lat, lock, stop = [], threading.Lock(), threading.Event()
    t_start = time.time()
    t_meas = t_start + a.warmup

    def client(i):
        rng = random.Random(i)
        handle(docs[:16])
        while not stop.is_set():
            t0 = time.time()
            handle(rng.sample(docs, 16))
            t1 = time.time()
            if t0 >= t_meas:
                with lock:
                    lat.append(t1 - t0)

    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    with ThreadPoolExecutor(WORKERS) as ex:
        for i in range(WORKERS):
            ex.submit(client, i)
        try:
            while not a.seconds or time.time() - t_start < a.seconds:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        stop.set()
    t_end = time.time()
    lat.sort()
    n = len(lat)
    print(json.dumps({"done": n, "rps": round(n / max(1e-9, t_end - t_meas), 2),
                      "p50_ms": round(lat[n // 2] * 1000, 2) if n else None,
                      "p99_ms": round(lat[min(n - 1, int(n * 0.99))] * 1000, 2) if n else None}), flush=True)


if __name__ == "__main__":
    main()
