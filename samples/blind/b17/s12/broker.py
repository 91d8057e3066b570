"""Job broker child: keeps a bounded queue of scoring jobs topped up."""
import os
import random
import time


def run(jobs, lifetime, n_cols):
    rng = random.Random(12)
    end = time.time() + lifetime
    i = 0
    while time.time() < end:
        cols = rng.sample(range(n_cols), 6)
        weights = [rng.uniform(-1, 1) for _ in cols]
        try:
            jobs.put({"id": i, "cols": cols, "weights": weights, "k": 100}, timeout=0.5)
            i += 1
        except Exception:
            pass
    os._exit(0)
