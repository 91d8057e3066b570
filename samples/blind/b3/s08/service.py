"""Inference service."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import multiprocessing as mp
import time

import numpy as np

DIM = int(os.environ.get("SVC_DIM", "512"))
ROWS = 40000
TOPK = 10
BATCH = 64

_index = None
_proj = None


def _init():
    global _index, _proj
    rng = np.random.default_rng(0)
    _proj = (rng.standard_normal((768, DIM)) / np.sqrt(768)).astype(np.float32)
    _index = rng.standard_normal((ROWS, DIM), dtype=np.float32)
    _index /= np.linalg.norm(_index, axis=1, keepdims=True)


def search(job):
    seed, t_sub = job
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((BATCH, 768), dtype=np.float32) @ _proj
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ _index.T
    top = np.argpartition(scores, -TOPK, axis=1)[:, -TOPK:]
    best = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-best, axis=1)
    return t_sub, np.take_along_axis(top, order, axis=1)[:, 0].tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=0)
    ap.add_argument("--procs", type=int, default=int(os.environ.get("SVC_PROCS", "2")))
    ap.add_argument("--inflight", type=int, default=6)
    a = ap.parse_args()
    pool = mp.Pool(a.procs, initializer=_init)
    pool.map(search, [(i, time.time()) for i in range(a.procs * 2)])
    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    t_start = time.time()
    t_meas = t_start + a.warmup
    lat = []
    pending = []
    seq = 0
    try:
        while not a.seconds or time.time() - t_start < a.seconds:
            while len(pending) < a.inflight:
                seq += 1
                pending.append(pool.apply_async(search, ((seq, time.time()),)))
            done = [p for p in pending if p.ready()]
            if not done:
                pending[0].wait(0.05)
                continue
            for p in done:
                pending.remove(p)
                t_sub, _ = p.get()
                t1 = time.time()
                if t_sub >= t_meas:
                    lat.append(t1 - t_sub)
    except KeyboardInterrupt:
        pass
    t_end = time.time()
    pool.terminate()
    lat.sort()
    n = len(lat)
    print(json.dumps({"done": n, "rps": round(n / max(1e-9, t_end - t_meas), 2),
                      "p50_ms": round(lat[n // 2] * 1000, 2) if n else None,
                      "p99_ms": round(lat[min(n - 1, int(n * 0.99))] * 1000, 2) if n else None}), flush=True)


if __name__ == "__main__":
    main()
