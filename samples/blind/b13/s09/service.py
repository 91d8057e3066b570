"""Item scoring workers: worker processes score the whole item table for each request
(weighted sum of a few feature columns) and return the best item."""
import itertools
import multiprocessing as mp
import os
import random
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYOUT = os.environ.get("SVC_LAYOUT", "rows")
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s09-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s09-ready")
N_ITEMS, N_FEATS, USED = 2_000_000, 64, 8

rng = np.random.default_rng(11)
TABLE = rng.random((N_ITEMS, N_FEATS), dtype=np.float32)
COLUMNS = [np.ascontiguousarray(TABLE[:, j]) for j in range(USED)] if LAYOUT == "columns" else None


def worker(inq, outq):
    acc = np.empty(N_ITEMS, np.float32)
    tmp = np.empty(N_ITEMS, np.float32)
    while True:
        req = inq.get()
        if req is None:
            return
        rid, weights = req
        cols = COLUMNS if COLUMNS is not None else [TABLE[:, j] for j in range(USED)]
        np.multiply(cols[0], np.float32(weights[0]), out=acc)
        for j in range(1, USED):
            np.multiply(cols[j], np.float32(weights[j]), out=tmp)
            acc += tmp
        best = int(np.argmax(acc))
        outq.put((rid, best, float(acc[best])))


pending = {}
plock = threading.Lock()
ids = itertools.count()
records = []


def dispatcher(outq):
    while True:
        rid, best, score = outq.get()
        with plock:
            ev = pending.pop(rid)
        ev[1] = (best, score)
        ev[0].set()


def client(inq, stop_at, seed):
    r = random.Random(seed)
    while time.time() < stop_at:
        rid = next(ids)
        ev = [threading.Event(), None]
        with plock:
            pending[rid] = ev
        t = time.perf_counter()
        inq.put((rid, [r.uniform(-1, 1) for _ in range(USED)]))
        ev[0].wait()
        records.append(f"{time.time():.4f} {(time.perf_counter() - t) * 1000:.3f} ok\n")


def main():
    stop_at = time.time() + LIFETIME
    ctx = mp.get_context("fork")
    inq, outq = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(inq, outq), daemon=True) for _ in range(2)]
    for p in procs:
        p.start()
    threading.Thread(target=dispatcher, args=(outq,), daemon=True).start()
    ts = [threading.Thread(target=client, args=(inq, stop_at, s), daemon=True) for s in range(CLIENTS)]
    for t in ts:
        t.start()
    time.sleep(1.0)
    open(READY, "w").close()
    with open(STATS, "a") as f:
        while time.time() < stop_at + 1:
            time.sleep(0.3)
            batch = records[:]
            del records[:len(batch)]
            f.writelines(batch)
            f.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
