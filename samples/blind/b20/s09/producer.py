"""Emits JSON transaction events on stdout at a steady rate (EVENT_RATE per second)."""
import json
import os
import random
import sys
import time

RATE = float(os.environ.get("EVENT_RATE", "20"))
rnd = random.Random(11)
out = sys.stdout
t_next = time.time()
n = 0
while True:
    t_next += rnd.expovariate(RATE)
    d = t_next - time.time()
    if d > 0:
        time.sleep(d)
    ev = {"id": n, "ts": time.time(), "amount": round(rnd.uniform(1, 500), 2),
          "merchant": rnd.randint(1, 5000), "features": [round(rnd.gauss(0, 1), 3) for _ in range(24)]}
    try:
        out.write(json.dumps(ev) + "\n")
        out.flush()
    except BrokenPipeError:
        break
    n += 1
