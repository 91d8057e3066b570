"""Nearest-item retrieval worker: in-process clients submit query batches to a thread pool."""
import concurrent.futures as cf
import os
import random
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
TOPK_MODE = os.environ.get("SVC_TOPK", "sort")
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s04-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s04-ready")
K = 20

rng = np.random.default_rng(4)
ITEMS = rng.standard_normal((100_000, 32)).astype(np.float32)
QUERIES = rng.standard_normal((64, 8, 32)).astype(np.float32)


def retrieve(qi):
    q = QUERIES[qi % len(QUERIES)]
    scores = q @ ITEMS.T
    if TOPK_MODE == "partition":
        part = np.argpartition(-scores, K, axis=1)[:, :K]
        top = np.take_along_axis(scores, part, axis=1)
        order = np.argsort(-top, axis=1)
        idx = np.take_along_axis(part, order, axis=1)
    else:
        idx = np.argsort(-scores, axis=1)[:, :K]
    return idx


records = []
rec_lock = threading.Lock()


def client(pool, stop_at, seed):
    r = random.Random(seed)
    while time.time() < stop_at:
        t = time.perf_counter()
        pool.submit(retrieve, r.randrange(1 << 20)).result()
        ms = (time.perf_counter() - t) * 1000
        with rec_lock:
            records.append(f"{time.time():.4f} {ms:.3f} ok\n")


def main():
    stop_at = time.time() + LIFETIME
    pool = cf.ThreadPoolExecutor(WORKERS, thread_name_prefix="retrieve")
    list(pool.map(retrieve, range(4)))
    ts = [threading.Thread(target=client, args=(pool, stop_at, s), daemon=True) for s in range(CLIENTS)]
    for t in ts:
        t.start()
    open(READY, "w").close()
    with open(STATS, "a") as f:
        while time.time() < stop_at + 1:
            time.sleep(0.3)
            with rec_lock:
                batch, records[:] = list(records), []
            f.writelines(batch)
            f.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
