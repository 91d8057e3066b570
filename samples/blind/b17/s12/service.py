"""Segment scoring worker: asyncio consumer of a local broker queue, NumPy scoring in an executor."""
import asyncio
import multiprocessing as mp
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import broker

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYOUT = os.environ.get("SVC_LAYOUT", "rows")
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
N_ROWS, N_COLS = 2_000_000, 32
IN_FLIGHT = 4

rng = np.random.default_rng(4)
TABLE = rng.standard_normal((N_ROWS, N_COLS), dtype=np.float32)
if LAYOUT == "columns":
    TABLE = np.asfortranarray(TABLE)

compute = ThreadPoolExecutor(max_workers=2)
fetch = ThreadPoolExecutor(max_workers=1)
records = []


def score(job):
    cols, w = job["cols"], job["weights"]
    s = TABLE[:, cols[0]] * np.float32(w[0])
    for c, wc in zip(cols[1:], w[1:]):
        s += TABLE[:, c] * np.float32(wc)
    k = job["k"]
    top = np.argpartition(-s, k)[:k]
    return top[np.argsort(-s[top])]


async def handle(job, sem, loop):
    try:
        t = time.time()
        await loop.run_in_executor(compute, score, job)
        now = time.time()
        records.append(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")
    finally:
        sem.release()


async def flush_records():
    with open(STATS, "a") as f:
        while True:
            await asyncio.sleep(0.25)
            n = len(records)
            f.writelines(records[:n])
            del records[:n]
            f.flush()



def shutdown():
    for child in mp.active_children():
        child.kill()
    os._exit(0)

async def main():
    loop = asyncio.get_running_loop()
    jobs = mp.get_context("fork").Queue(maxsize=64)
    child = mp.get_context("fork").Process(target=broker.run, args=(jobs, LIFETIME, N_COLS), daemon=True)
    child.start()
    score({"cols": [0, 1, 2, 3, 4, 5], "weights": [1.0] * 6, "k": 100})
    asyncio.create_task(flush_records())
    if READY:
        open(READY, "w").close()
    sem = asyncio.Semaphore(IN_FLIGHT)
    while True:
        await sem.acquire()
        try:
            job = await loop.run_in_executor(fetch, jobs.get, True, 1.0)
        except queue.Empty:
            sem.release()
            continue
        asyncio.create_task(handle(job, sem, loop))


if __name__ == "__main__":
    threading.Timer(LIFETIME, shutdown).start()
    asyncio.run(main())
