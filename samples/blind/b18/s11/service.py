"""Nearest-neighbour retrieval worker: asyncio front end, NumPy search run in a thread-pool
executor. Loaded by in-process client coroutines."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import asyncio
import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SELECT = os.environ.get("SVC_TOPK", "sort")
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
POOL = int(os.environ.get("SVC_POOL", "2"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
N, DIM, QB, K = 60000, 64, 16, 50

_rng = np.random.default_rng(0)
INDEX = _rng.standard_normal((N, DIM)).astype(np.float32)
INDEX /= np.linalg.norm(INDEX, axis=1, keepdims=True)


def search(seed):
    q = np.random.default_rng(seed).standard_normal((QB, DIM)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    sims = q @ INDEX.T
    if SELECT == "partition":
        part = np.argpartition(-sims, K, axis=1)[:, :K]
        vals = np.take_along_axis(sims, part, axis=1)
        order = np.argsort(-vals, axis=1)
        top = np.take_along_axis(part, order, axis=1)
    else:
        top = np.argsort(-sims, axis=1)[:, :K]
    return top


async def client(loop, pool, out, seed, deadline):
    r = random.Random(seed)
    while time.time() < deadline:
        t0 = time.time()
        await loop.run_in_executor(pool, search, r.randrange(1 << 30))
        t1 = time.time()
        out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


async def flusher(out, deadline):
    while time.time() < deadline:
        await asyncio.sleep(0.5)
        out.flush()


async def main():
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=POOL)
    await loop.run_in_executor(pool, search, 0)
    out = open(STATS, "a", buffering=1 << 16)
    deadline = time.time() + LIFETIME
    if READY:
        open(READY, "w").close()
    await asyncio.gather(flusher(out, deadline), *(client(loop, pool, out, i, deadline) for i in range(CLIENTS)))
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
