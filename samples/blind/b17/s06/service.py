"""Queue consumer: reads scoring jobs from stdin and fans the rows out to worker processes."""
import json
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
POOL_MODE = os.environ.get("SVC_POOL", "per_job")
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
PROCS = 2

rng = np.random.default_rng(1)
W1 = rng.standard_normal((16, 128)).astype(np.float32)
W2 = rng.standard_normal((128, 8)).astype(np.float32)


def score_chunk(rows):
    x = np.asarray(rows, dtype=np.float32)
    h = np.maximum(x @ W1, 0)
    return (h @ W2).argmax(axis=1).tolist()


def process(job, pool):
    rows = job["rows"]
    chunks = [rows[i::PROCS] for i in range(PROCS)]
    if pool is None:
        with mp.get_context("fork").Pool(PROCS) as p:
            parts = p.map(score_chunk, chunks)
    else:
        parts = pool.map(score_chunk, chunks)
    return sum(parts, [])



def shutdown():
    for child in mp.active_children():
        child.kill()
    os._exit(0)

def main():
    threading.Timer(LIFETIME, shutdown).start()
    pool = mp.get_context("fork").Pool(PROCS) if POOL_MODE == "shared" else None
    stats = open(STATS, "a")
    if READY:
        open(READY, "w").close()
    last = time.time()
    for line in sys.stdin:
        t = time.time()
        job = json.loads(line)
        process(job, pool)
        now = time.time()
        stats.write(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")
        if now - last > 0.3:
            stats.flush()
            last = now
    stats.flush()


if __name__ == "__main__":
    main()
