"""Background catalogue re-indexing: recomputes item projections in a loop until its lifetime ends."""
import multiprocessing as mp
import os
import sys
import time

import numpy as np

LIFETIME = float(sys.argv[1])
PARENT = int(sys.argv[2])
JOBS = int(os.environ.get("REINDEX_JOBS", "2"))


def rebuild(seed, deadline, owner):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((256, 256))
    while time.time() < deadline and os.getppid() == owner:
        for _ in range(5):
            a = np.tanh(a @ a.T / 256.0)


if __name__ == "__main__":
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if os.environ.get("REINDEX_NICE"):
        os.nice(int(os.environ["REINDEX_NICE"]))
    deadline = time.time() + LIFETIME
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=rebuild, args=(i, deadline, os.getpid())) for i in range(JOBS)]
    for p in procs:
        p.start()
    while any(p.is_alive() for p in procs):
        if os.getppid() != PARENT or time.time() > deadline:
            for p in procs:
                p.terminate()
            break
        time.sleep(0.2)
    for p in procs:
        p.join(timeout=2)
