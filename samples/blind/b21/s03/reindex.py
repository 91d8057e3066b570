"""Background catalogue re-indexer: rebuilds item cluster assignments in a loop."""
import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
import numpy as np

parent = int(sys.argv[1])
stop = time.time() + float(sys.argv[2])
seed = int(sys.argv[3])
rng = np.random.default_rng(seed)
items = rng.standard_normal((20000, 64)).astype(np.float32)
centroids = items[rng.choice(len(items), 256, replace=False)]
while time.time() < stop and os.getppid() == parent:
    d = (items ** 2).sum(1)[:, None] - 2 * items @ centroids.T + (centroids ** 2).sum(1)[None]
    assign = d.argmin(1)
    for k in range(0, 256, 32):
        m = assign == k
        if m.any():
            centroids[k] = items[m].mean(0)
