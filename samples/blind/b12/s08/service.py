"""Co-visitation recommender worker: scatters a session's item events into a dense score table and reads candidates back.

Load comes from in-process client threads submitting to a ThreadPoolExecutor.
"""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
TABLE_SLOTS = 1 << 24  # 16M float32 slots = 64 MB
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
REUSE = os.environ.get("SVC_TABLE_REUSE", "0") == "1"

_local = threading.local()


def table():
    if REUSE:
        t = getattr(_local, "table", None)
        if t is None:
            t = _local.table = np.zeros(TABLE_SLOTS, dtype=np.float32)
        return t
    return np.zeros(TABLE_SLOTS, dtype=np.float32)


def recommend(events, weights, candidates):
    t = table()
    t[events] += weights
    scores = t[candidates]
    top = candidates[np.argsort(-scores)[:20]]
    if REUSE:
        t[events] = 0.0
    return top


def main():
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1 << 16)
    lock = threading.Lock()
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    deadline = time.time() + LIFETIME

    def client(seed):
        rng = np.random.default_rng(seed)
        last = time.time()
        while time.time() < deadline:
            events = rng.integers(0, TABLE_SLOTS, size=6000)
            weights = rng.random(6000, dtype=np.float32)
            cands = events[rng.integers(0, 6000, size=500)]
            t0 = time.time()
            pool.submit(recommend, events, weights, cands).result()
            now = time.time()
            with lock:
                stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
                if now - last > 0.3:
                    stats.flush()
                    last = now

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for th in threads:
        th.start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    for th in threads:
        th.join()
    with lock:
        stats.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
