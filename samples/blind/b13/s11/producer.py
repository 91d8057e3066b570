"""Event source: writes JSON events to stdout at a fixed rate (EVENTS_PER_S)."""
import json
import os
import random
import sys
import time

RATE = float(os.environ.get("EVENTS_PER_S", "20"))
r = random.Random(0)
period = 1.0 / RATE
nxt = time.time()
while True:
    nxt += period
    delay = nxt - time.time()
    if delay > 0:
        time.sleep(delay)
    ev = {"ts": time.time(), "user": r.randrange(10**6), "x": [round(r.gauss(0, 1), 4) for _ in range(32)]}
    try:
        sys.stdout.write(json.dumps(ev) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        break
