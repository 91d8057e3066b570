"""Batch embedding worker: a multiprocessing pool scores requests from in-process clients.
Optionally launches the nightly index rebuild job (rebuild.py) alongside."""
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REBUILD = os.environ.get("SVC_INDEX_REBUILD", "0") == "1"
CLIENTS = int(os.environ.get("SVC_CLIENTS", "6"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s07-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s07-ready")

W = None


def init():
    global W
    rng = np.random.default_rng(0)
    W = [rng.standard_normal((384, 384)).astype(np.float32) / 20 for _ in range(4)]


def embed(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((48, 384)).astype(np.float32)
    for w in W:
        x = np.tanh(x @ w)
    return float(x.mean())


records = []
rec_lock = threading.Lock()


def client(pool, stop_at, seed):
    i = seed * 100000
    while time.time() < stop_at:
        t = time.perf_counter()
        pool.apply(embed, (i,))
        ms = (time.perf_counter() - t) * 1000
        i += 1
        with rec_lock:
            records.append(f"{time.time():.4f} {ms:.3f} ok\n")


def main():
    stop_at = time.time() + LIFETIME
    pool = mp.get_context("fork").Pool(2, initializer=init)
    pool.map(embed, range(8))
    if REBUILD:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.Popen([sys.executable, os.path.join(here, "rebuild.py"), str(os.getpid()), str(LIFETIME)],
                         stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
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
