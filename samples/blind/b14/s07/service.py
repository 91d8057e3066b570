"""Cohort statistics workers: each request picks a set of feature columns and aggregates them over all accounts."""
import multiprocessing as mp
import os
import time

import numpy as np

N_ROWS = 400_000
N_COLS = 192
N_WORKERS = 2
LAYOUT = os.environ.get("SVC_TABLE_ORDER", "C")
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")


def build_table():
    table = np.empty((N_ROWS, N_COLS), dtype=np.float32, order=LAYOUT)
    rng = np.random.default_rng(8)
    step = 50_000
    for s in range(0, N_ROWS, step):
        table[s:s + step] = rng.standard_normal((min(step, N_ROWS - s), N_COLS), dtype=np.float32)
    return table


TABLE = build_table()


def cohort_stats(cols):
    block = TABLE[:, cols]
    mean = block.mean(0)
    spread = block.max(0) - block.min(0)
    return float((mean * spread).sum())


def worker(wid, deadline, ready):
    rng = np.random.default_rng(100 + wid)
    out = open(STATS, "a", buffering=1 << 14)
    ready.set()
    last = time.time()
    while time.time() < deadline:
        cols = np.sort(rng.choice(N_COLS, size=12, replace=False))
        t0 = time.time()
        cohort_stats(cols)
        now = time.time()
        out.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
        if now - last > 0.3:
            out.flush()
            last = now
    out.close()


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    deadline = time.time() + LIFETIME
    events = [ctx.Event() for _ in range(N_WORKERS)]
    procs = [ctx.Process(target=worker, args=(i, deadline, events[i])) for i in range(N_WORKERS)]
    for p in procs:
        p.start()
    for e in events:
        e.wait()
    if READY:
        open(READY, "w").close()
    for p in procs:
        p.join()
