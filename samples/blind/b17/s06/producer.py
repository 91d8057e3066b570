"""Feeds scoring jobs to the worker on stdout, one JSON line per job."""
import json
import random
import sys

rng = random.Random(9)
out = sys.stdout
i = 0
try:
    while True:
        rows = [[round(rng.random(), 3) for _ in range(16)] for _ in range(32)]
        out.write(json.dumps({"id": i, "rows": rows}) + "\n")
        i += 1
        if i % 8 == 0:
            out.flush()
except (BrokenPipeError, KeyboardInterrupt):
    pass
