"""Inference service."""
import argparse
import json
import os
import random
import threading
import time
import unicodedata
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

DIM = 1 << 18
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))
POOL = os.environ.get("SVC_POOL", "thread")

WORDS = ("the quick brown fox jumps over lazy dog payment refund order delivery late broken "
         "excellent service support ticket account password reset invoice shipping tracking "
         "café naïve résumé crème brûlée déjà vu coöperate").split()


def make_doc(rng):
    n = rng.randint(1200, 1600)
    return " ".join(rng.choice(WORDS).capitalize() if rng.random() < 0.1 else rng.choice(WORDS)
                    for _ in range(n)) + "!!! Visit http://example.com/x?y=1 now..."


def featurize(text):
    """Normalise text and hash word and char-trigram features."""
    out = []
    for ch in unicodedata.normalize("NFKD", text.lower()):
        if unicodedata.combining(ch):
            continue
        out.append(ch if ch.isalnum() else " ")
    toks = "".join(out).split()
    idx = {}
    for t in toks:
        h = hash(t) % DIM
        idx[h] = idx.get(h, 0.0) + 1.0
        p = "#" + t + "#"
        for i in range(len(p) - 2):
            h = hash(p[i:i + 3]) % DIM
            idx[h] = idx.get(h, 0.0) + 0.5
    keys = np.fromiter(idx.keys(), dtype=np.int64, count=len(idx))
    vals = np.fromiter(idx.values(), dtype=np.float32, count=len(idx))
    vals /= np.sqrt((vals * vals).sum())
    return keys, vals


class Scorer:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.w = rng.standard_normal((DIM, 4)).astype(np.float32) * 0.05
        self.b = np.zeros(4, np.float32)

    def score(self, keys, vals):
        z = vals @ self.w[keys] + self.b
        e = np.exp(z - z.max())
        return e / e.sum()


_proc_pool = None


def handle(scorer, text):
    if _proc_pool is not None:
        keys, vals = _proc_pool.submit(featurize, text).result()
    else:
        keys, vals = featurize(text)
    return scorer.score(keys, vals)


def main():
    global _proc_pool
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=0)
    a = ap.parse_args()
    if POOL == "process":
        _proc_pool = ProcessPoolExecutor(os.cpu_count() or 2)
        list(_proc_pool.map(featurize, ["warm up"] * 4))
    scorer = Scorer()
    docs = [make_doc(random.Random(i)) for i in range(64)]
    lat = []
    stop = threading.Event()
    lock = threading.Lock()
    t_start = time.time()
    t_meas = t_start + a.warmup

    def client(i):
        rng = random.Random(i)
        while not stop.is_set():
            t0 = time.time()
            handle(scorer, rng.choice(docs))
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
    if _proc_pool is not None:
        _proc_pool.shutdown()


if __name__ == "__main__":
    main()
