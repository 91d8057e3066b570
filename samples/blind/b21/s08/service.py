"""Similar-item recommender: asyncio request loop, NumPy scoring in an executor, in-process clients."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
TOPK_MODE = os.environ.get("SVC_TOPK", "sort")
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s08-records.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s08-ready")
ITEMS, DIM, K = 20000, 128, 10

rng = np.random.default_rng(0)
catalogue = rng.standard_normal((ITEMS, DIM)).astype(np.float32)
catalogue /= np.linalg.norm(catalogue, axis=1, keepdims=True)


def recommend(queries):
    scores = queries @ catalogue.T
    if TOPK_MODE == "partition":
        idx = np.argpartition(-scores, K, axis=1)[:, :K]
        part = np.take_along_axis(scores, idx, axis=1)
        order = np.argsort(-part, axis=1)
        return np.take_along_axis(idx, order, axis=1)
    return np.argsort(-scores, axis=1)[:, :K]


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1 << 16)
        self.last = time.time()

    def add(self, t0, t1):
        self.f.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
        if t1 - self.last > 0.3:
            self.f.flush()
            self.last = t1


async def client(loop, pool, rec, seed, stop):
    r = np.random.default_rng(seed)
    batches = [r.standard_normal((32, DIM)).astype(np.float32) for _ in range(8)]
    i = 0
    while time.time() < stop:
        t0 = time.time()
        await loop.run_in_executor(pool, recommend, batches[i % 8])
        rec.add(t0, time.time())
        i += 1


async def main():
    stop = time.time() + LIFETIME
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=2)
    await loop.run_in_executor(pool, recommend, catalogue[:32])
    rec = Recorder(STATS)
    open(READY, "w").close()
    await asyncio.gather(*(client(loop, pool, rec, i, stop) for i in range(CLIENTS)))
    rec.f.flush()


if __name__ == "__main__":
    asyncio.run(main())
    os._exit(0)
