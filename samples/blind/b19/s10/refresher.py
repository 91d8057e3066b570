"""Keeps the candidate index fresh: periodically re-clusters the item vectors (k-means steps)."""
import multiprocessing as mp
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60")) + 5


def recluster(seed):
    rng = np.random.default_rng(seed)
    items = rng.standard_normal((20000, 32)).astype(np.float32)
    stop = time.time() + LIFETIME
    centers = items[:256].copy()
    while time.time() < stop:
        d = (items ** 2).sum(1)[:, None] - 2 * items @ centers.T + (centers ** 2).sum(1)[None, :]
        assign = d.argmin(1)
        for k in range(0, 256, 16):
            m = assign == k
            if m.any():
                centers[k] = items[m].mean(0)


if __name__ == "__main__":
    procs = [mp.Process(target=recluster, args=(s,)) for s in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
