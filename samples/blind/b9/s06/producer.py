"""Upstream feeder: writes one JSON job per line to stdout as fast as the consumer drains the pipe."""
import json
import random
import sys
import time

random.seed(11)
out = sys.stdout
i = 0
while True:
    job = {"job": i, "clip": f"clip-{random.randrange(1 << 24):06x}", "gain": round(random.uniform(0.5, 2.0), 3),
           "offset": round(random.uniform(-0.1, 0.1), 4), "ts": time.time()}
    try:
        out.write(json.dumps(job) + "\n")
        out.flush()
    except BrokenPipeError:
        break
    i += 1
