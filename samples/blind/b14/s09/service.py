"""Session feature builder: expands a user's event log into a dense feature grid and scores it."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
REUSE = os.environ.get("SVC_REUSE_BUFFERS", "0") == "1"
CLIENTS = 4
GRID = (2048, 4096)  # 32 MB float32

rng = np.random.default_rng(6)
EVENTS = [(rng.integers(0, GRID[0], 300), rng.integers(0, GRID[1], 300), rng.random(300).astype(np.float32))
          for _ in range(256)]
ROW_W = rng.random(GRID[0]).astype(np.float32)
_local = threading.local()


PRIOR = 0.01


def grid_buffer():
    if not REUSE:
        return np.full(GRID, PRIOR, dtype=np.float32)
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = np.empty(GRID, dtype=np.float32)
    buf.fill(PRIOR)
    return buf


def score(user):
    rows, cols, vals = EVENTS[user % len(EVENTS)]
    grid = grid_buffer()
    np.add.at(grid, (rows, cols), vals)
    active = grid[rows, cols]
    return float((active * ROW_W[rows]).sum())


def client(pool, cid, deadline, out, lock):
    r = np.random.default_rng(cid)
    lines = []
    while time.time() < deadline:
        t0 = time.time()
        pool.submit(score, int(r.integers(0, 1 << 20))).result()
        now = time.time()
        lines.append(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
        if len(lines) >= 20:
            with lock:
                out.write("".join(lines)); out.flush()
            lines = []
    with lock:
        out.write("".join(lines)); out.flush()


def main():
    pool = ThreadPoolExecutor(max_workers=CLIENTS)
    for f in [pool.submit(score, i) for i in range(8)]:
        f.result()
    out = open(STATS, "a")
    lock = threading.Lock()
    deadline = time.time() + LIFETIME
    threads = [threading.Thread(target=client, args=(pool, i, deadline, out, lock)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    for t in threads:
        t.join()
    pool.shutdown()


if __name__ == "__main__":
    main()
