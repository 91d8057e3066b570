"""Emits thumbnail jobs on stdout at a steady rate."""
import json
import os
import random
import sys
import time

rate = float(os.environ.get("LOAD_RATE", "5"))
rng = random.Random(2)
i = 0
nxt = time.time()
try:
    while True:
        sys.stdout.write(json.dumps({"id": i, "seed": rng.randint(0, 1 << 30), "size": rng.choice([256, 320, 384])}) + "\n")
        sys.stdout.flush()
        i += 1
        nxt += rng.expovariate(rate)
        time.sleep(max(0.0, nxt - time.time()))
except (BrokenPipeError, KeyboardInterrupt):
    pass
