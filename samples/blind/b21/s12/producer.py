"""Writes chat messages as JSON lines to stdout at a fixed arrival rate (LOAD_RATE per second)."""
import json
import os
import random
import sys
import time

rate = float(os.environ.get("LOAD_RATE", "20"))
random.seed(31)
msgs = [json.dumps({"user": random.randint(1, 9999),
                    "text": " ".join(f"t{random.randint(1, 2999)}" for _ in range(random.randint(10, 40)))}) + "\n"
        for _ in range(500)]
out = sys.stdout
t_next = time.time()
i = 0
while True:
    out.write(msgs[i % len(msgs)])
    out.flush()
    i += 1
    t_next += 1.0 / rate
    delay = t_next - time.time()
    if delay > 0:
        time.sleep(delay)
