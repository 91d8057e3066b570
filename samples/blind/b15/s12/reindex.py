"""Background index rebuild: recomputes item clusters in several processes."""
import os
import sys
import time
from multiprocessing import get_context

import numpy as np


def rebuild(seed, parent, t_end):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4000, 32))
    while time.time() < t_end and os.getppid() == parent:
        c = x[rng.integers(0, len(x), 16)]
        for _ in range(5):
            assign = np.zeros(len(x), int)
            for i in range(len(x)):
                d = ((c - x[i]) ** 2).sum(1)
                assign[i] = int(d.argmin())
                if i % 500 == 0 and os.getppid() != parent:
                    return
            c = np.stack([x[assign == k].mean(0) if (assign == k).any() else c[k] for k in range(len(c))])


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    lifetime = float(os.environ.get("SVC_LIFETIME", "60"))
    watch = os.getppid()
    t_end = time.time() + lifetime
    ctx = get_context("fork")
    procs = [ctx.Process(target=rebuild, args=(i, os.getpid(), t_end)) for i in range(n)]
    for p in procs:
        p.start()
    while time.time() < t_end and os.getppid() == watch:
        time.sleep(0.5)
    for p in procs:
        p.terminate()
