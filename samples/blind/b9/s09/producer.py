"""Event source: emits transaction events on stdout at a fixed arrival rate (EVENTS_PER_S)."""
import json
import os
import random
import sys
import time

rate = float(os.environ.get("EVENTS_PER_S", "20"))
random.seed(3)
t_next = time.time()
i = 0
while True:
    now = time.time()
    if now < t_next:
        time.sleep(t_next - now)
    ev = {"id": i, "ts": time.time(), "amount": round(random.expovariate(1 / 40), 2),
          "merchant": random.randrange(5000), "f": [round(random.random(), 4) for _ in range(48)]}
    try:
        sys.stdout.write(json.dumps(ev) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        break
    i += 1
    t_next += 1.0 / rate
