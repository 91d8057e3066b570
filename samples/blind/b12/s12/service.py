"""Nearest-neighbour lookup worker: exact inner-product search over a 1M x 64 embedding table.

Requests come from in-process client threads through a queue to a search thread.
"""
import os
import queue
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
MAX_BATCH = int(os.environ.get("SVC_MAX_BATCH", "1"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
MAX_WAIT_S = float(os.environ.get("SVC_MAX_WAIT_MS", "3")) / 1000.0
ROWS, DIM = 1_000_000, 64
BLOCK = 16384


class Index:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.emb = rng.standard_normal((ROWS, DIM), dtype=np.float32)

    def search(self, qs):
        n = len(qs)
        cols = np.arange(n)
        best = np.full(n, -np.inf, dtype=np.float32)
        arg = np.zeros(n, dtype=np.int64)
        for start in range(0, ROWS, BLOCK):
            sc = self.emb[start:start + BLOCK] @ qs.T
            i = sc.argmax(axis=0)
            v = sc[i, cols]
            better = v > best
            best[better] = v[better]
            arg[better] = i[better] + start
        return arg


def main():
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1 << 16)
    lock = threading.Lock()
    index = Index()
    requests = queue.Queue()
    deadline = time.time() + LIFETIME

    def searcher():
        while True:
            batch = [requests.get()]
            until = time.time() + MAX_WAIT_S
            while len(batch) < MAX_BATCH:
                left = until - time.time()
                if left <= 0:
                    break
                try:
                    batch.append(requests.get(timeout=left))
                except queue.Empty:
                    break
            qs = np.stack([b[0] for b in batch])
            ids = index.search(qs)
            for (q, box, ev), i in zip(batch, ids):
                box.append(int(i))
                ev.set()

    def client(seed):
        rng = np.random.default_rng(seed)
        last = time.time()
        while time.time() < deadline:
            q = rng.standard_normal(DIM, dtype=np.float32)
            box, ev = [], threading.Event()
            t0 = time.time()
            requests.put((q, box, ev))
            ev.wait()
            now = time.time()
            with lock:
                stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
                if now - last > 0.3:
                    stats.flush()
                    last = now

    threading.Thread(target=searcher, daemon=True).start()
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
