import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import multiprocessing as mp
import threading
import time

import numpy as np

ROWS, DIM = 500_000, 64
DTYPE = np.float32 if os.environ.get("SVC_INDEX_DTYPE", "float64") == "float32" else np.float64
WORKERS = 2
CLIENTS = 4
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
LIFETIME = float(os.environ.get("SVC_LIFETIME", "600"))

catalog = None


def build_catalog():
    rng = np.random.default_rng(7)
    out = np.empty((ROWS, DIM), dtype=DTYPE)
    step = 50_000
    for i in range(0, ROWS, step):
        out[i:i + step] = rng.standard_normal((step, DIM), dtype=np.float32)
    return out


def worker(tasks, results):
    while True:
        item = tasks.get()
        if item is None:
            return
        rid, seed = item
        q = np.random.default_rng(seed).standard_normal(DIM).astype(DTYPE)
        s = catalog @ q
        best = int(s.argmax())
        results.put((rid, best, float(s[best])))


def main():
    global catalog
    catalog = build_catalog()
    ctx = mp.get_context("fork")
    tasks, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(tasks, results), daemon=True) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    pending = {}
    lock = threading.Lock()
    stats = open(STATS, "a", buffering=1 << 16)
    stop = time.time() + LIFETIME
    sem = threading.Semaphore(CLIENTS)

    def client(cid):
        n = 0
        while time.time() < stop:
            sem.acquire()
            rid = (cid << 32) | n
            n += 1
            with lock:
                pending[rid] = time.time()
            tasks.put((rid, rid & 0xFFFFFFF))

    def collector():
        last = time.time()
        while True:
            rid, best, score = results.get()
            t = time.time()
            with lock:
                t0 = pending.pop(rid)
            stats.write(f"{t:.4f} {(t - t0) * 1000:.3f} ok\n")
            if t - last > 0.3:
                stats.flush()
                last = t
            sem.release()

    threading.Thread(target=collector, daemon=True).start()
    for c in range(CLIENTS):
        threading.Thread(target=client, args=(c,), daemon=True).start()
    if READY:
        open(READY, "w").close()
    while time.time() < stop:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
