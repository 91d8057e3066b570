"""Feeds query jobs (JSON lines) to the worker's stdin; LOAD_RATE jobs/s (0 = as fast as the worker reads)."""
import json
import os
import random
import sys
import time

rate = float(os.environ.get("LOAD_RATE", "0"))
dim = int(os.environ.get("LOAD_DIM", "64"))
i = 0
t_next = time.time()
try:
    while True:
        i += 1
        job = {"id": i, "ts": time.time(), "vec": [round(random.gauss(0, 1), 4) for _ in range(dim)]}
        sys.stdout.write(json.dumps(job) + "\n")
        sys.stdout.flush()
        if rate > 0:
            t_next += random.expovariate(rate)
            d = t_next - time.time()
            if d > 0:
                time.sleep(d)
except (BrokenPipeError, KeyboardInterrupt):
    pass
