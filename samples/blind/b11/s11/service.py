"""Segment statistics workers: a broker process hands out column-aggregate jobs over an in-memory event table."""
import multiprocessing as mp
import os
import queue
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYOUT = os.environ.get("SVC_LAYOUT", "rows")
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
ROWS, COLS = 4_000_000, 32


def load_table():
    rng = np.random.default_rng(0)
    t = rng.random((ROWS, COLS), dtype=np.float32)
    return np.asfortranarray(t) if LAYOUT == "columns" else t


def broker(jobs, stop):
    r = np.random.default_rng(1)
    n = 0
    while not stop.is_set():
        job = (n, time.time(), int(r.integers(COLS)), float(r.random()))
        try:
            jobs.put(job, timeout=0.5)
            n += 1
        except queue.Full:
            pass


def worker(table, jobs, results, stop):
    while not stop.is_set():
        try:
            n, t, col, thr = jobs.get(timeout=0.5)
        except queue.Empty:
            continue
        c = table[:, col]
        total = float(c.sum(dtype=np.float64))
        peak = float(c.max())
        results.put((n, t, total / ROWS, peak, thr))


def main():
    table = load_table()
    ctx = mp.get_context("fork")
    jobs, results, stop = ctx.Queue(maxsize=16), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=broker, args=(jobs, stop), daemon=True)]
    procs += [ctx.Process(target=worker, args=(table, jobs, results, stop), daemon=True) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    deadline = time.time() + LIFETIME
    out = open(STATS, "a", buffering=1 << 16)
    if READY:
        open(READY, "w").close()
    last = time.time()
    while time.time() < deadline:
        try:
            n, t, mean, peak, thr = results.get(timeout=0.5)
        except queue.Empty:
            continue
        e = time.time()
        out.write(f"{e:.4f} {(e - t) * 1000:.3f} ok\n")
        if e - last > 0.3:
            out.flush()
            last = e
    out.flush()
    stop.set()
    for p in procs:
        p.join(timeout=3)
        if p.is_alive():
            p.terminate()


if __name__ == "__main__":
    main()
    os._exit(0)
