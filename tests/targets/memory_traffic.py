"""Request loops whose CPU moves memory: ``fresh`` stages each request in a newly allocated
40 MB buffer and normalises it out of place (every page a first touch), ``reuse`` does the
same arithmetic in buffers allocated once; ``gemv`` scores one query against a 64 MB table
(a matrix-vector product: one pass over the table per query), ``gemm`` scores 256 queries
at once against a table that stays in cache (a matrix product). ``near`` and ``far`` compute
squared distances elementwise, ``((table - q) ** 2).sum(1)`` (NumPy's own loops, no BLAS):
``near`` to a 512 KB table, 64 queries per request, ``far`` to the 64 MB one. One request
thread, one BLAS thread. Prints "ready" once set up, then runs SECONDS.

    python memory_traffic.py fresh|reuse|gemv|gemm|near|far SECONDS"""

from __future__ import annotations

import os
import sys
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread: no pool to oversubscribe

import numpy as np

SHAPE = (64, 224, 224, 3)  # 9.6 M floats: 38.5 MB of float32, above malloc's mmap threshold
MEAN, STD = np.float32(0.45), np.float32(0.22)


class RankModel:
    def __init__(self) -> None:
        self.w = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x[:, :64] @ self.w


def fresh(img: np.ndarray, model: RankModel, bufs: dict[str, np.ndarray]) -> None:
    batch = np.empty(SHAPE, np.float32)
    batch[:] = img
    x = (batch - MEAN) / STD
    model(x.reshape(-1, 147)[:64])


def reuse(img: np.ndarray, model: RankModel, bufs: dict[str, np.ndarray]) -> None:
    batch = bufs.setdefault("batch", np.empty(SHAPE, np.float32))
    batch[:] = img
    np.subtract(batch, MEAN, out=batch)
    np.divide(batch, STD, out=batch)
    model(batch.reshape(-1, 147)[:64])


def serve(mode: str, stop: threading.Event, ready: threading.Event) -> None:
    rng = np.random.default_rng(1)
    img = rng.integers(0, 255, SHAPE[1:], dtype=np.uint8)
    model, bufs = RankModel(), {}
    table = rng.standard_normal((262_144, 64)).astype(np.float32)  # 64 MB
    small = rng.standard_normal((2048, 256)).astype(np.float32)
    query, queries = table[0].copy(), small[:256].T.copy()
    centroids = rng.standard_normal((4096, 32)).astype(np.float32)  # 512 KB
    ready.set()
    while not stop.is_set():
        if mode == "fresh":
            fresh(img, model, bufs)
        elif mode == "reuse":
            reuse(img, model, bufs)
        elif mode == "gemv":
            np.argmax(table @ query)
        elif mode == "near":
            for q in centroids[:64]:
                np.argmin(((centroids - q) ** 2).sum(1))
        elif mode == "far":
            np.argmin(((table - query) ** 2).sum(1))
        else:
            np.argmax(small @ queries, axis=0)


def main() -> None:
    mode, seconds = sys.argv[1], float(sys.argv[2])
    stop, ready = threading.Event(), threading.Event()
    threading.Thread(target=serve, args=(mode, stop, ready), daemon=True).start()
    ready.wait()
    print("ready", flush=True)
    time.sleep(seconds)
    stop.set()


if __name__ == "__main__":
    main()
