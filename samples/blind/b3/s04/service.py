"""Inference service."""
import argparse
import asyncio
import json
import os
import random
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

TAGS = 24
SEQ = 96
EXECUTOR = os.environ.get("SVC_EXEC", "thread")
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))
CONCURRENCY = int(os.environ.get("SVC_CONCURRENCY", "16"))


class Encoder:
    def __init__(self, vocab=5000, dim=64):
        rng = np.random.default_rng(0)
        self.emb = rng.standard_normal((vocab, dim)).astype(np.float32)
        self.w = rng.standard_normal((dim, TAGS)).astype(np.float32) * 0.3
        self.trans = (rng.standard_normal((TAGS, TAGS)) * 0.5).tolist()

    def emissions(self, ids):
        return (self.emb[ids] @ self.w).tolist()


def decode(emissions, trans):
    """Best tag path for one sequence."""
    n = len(trans)
    score = list(emissions[0])
    back = []
    for t in range(1, len(emissions)):
        em = emissions[t]
        new = [0.0] * n
        ptr = [0] * n
        for j in range(n):
            best, arg = -1e30, 0
            for i in range(n):
                v = score[i] + trans[i][j]
                if v > best:
                    best, arg = v, i
            new[j] = best + em[j]
            ptr[j] = arg
        score = new
        back.append(ptr)
    j = max(range(n), key=score.__getitem__)
    path = [j]
    for ptr in reversed(back):
        j = ptr[j]
        path.append(j)
    return path[::-1]


_enc = None


def handle(ids):
    global _enc
    if _enc is None:
        _enc = Encoder()
    enc = _enc
    em = enc.emissions(ids)
    return decode(em, enc.trans)


async def serve(a):
    loop = asyncio.get_running_loop()
    if EXECUTOR == "process":
        pool = ProcessPoolExecutor(WORKERS)
    else:
        pool = ThreadPoolExecutor(WORKERS)
    await asyncio.gather(*(loop.run_in_executor(pool, handle, list(range(SEQ))) for _ in range(WORKERS)))
    lat = []
    t_start = time.time()
    t_meas = t_start + a.warmup
    stop = asyncio.Event()

    async def client(i):
        rng = random.Random(i)
        while not stop.is_set():
            ids = [rng.randrange(5000) for _ in range(SEQ)]
            t0 = time.time()
            await loop.run_in_executor(pool, handle, ids)
            t1 = time.time()
            if t0 >= t_meas:
                lat.append(t1 - t0)

    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    tasks = [asyncio.create_task(client(i)) for i in range(CONCURRENCY)]
    try:
        while not a.seconds or time.time() - t_start < a.seconds:
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    t_end = time.time()
    pool.shutdown()
    lat.sort()
    n = len(lat)
    print(json.dumps({"done": n, "rps": round(n / max(1e-9, t_end - t_meas), 2),
                      "p50_ms": round(lat[n // 2] * 1000, 2) if n else None,
                      "p99_ms": round(lat[min(n - 1, int(n * 0.99))] * 1000, 2) if n else None}), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=0)
    try:
        asyncio.run(serve(ap.parse_args()))
    except KeyboardInterrupt:
        pass
