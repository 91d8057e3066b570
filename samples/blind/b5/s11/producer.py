"""Ticket feed: writes tickets (JSON lines) to stdout at LOAD_RATE tickets/s (Poisson arrivals)."""
import json
import os
import random
import sys
import time

rate = float(os.environ.get("LOAD_RATE", "5"))
rng = random.Random(3)
syl = ["da", "me", "ko", "ri", "su", "ta", "ne", "po", "li", "va", "ing", "er", "ly", "tion"]
words = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 3))) for _ in range(1500)]
i = 0
t_next = time.time()
try:
    while True:
        i += 1
        text = " ".join(random.choices(words, k=random.randint(20, 80)))
        sys.stdout.write(json.dumps({"id": i, "ts": time.time(), "text": text}) + "\n")
        sys.stdout.flush()
        t_next += random.expovariate(rate)
        d = t_next - time.time()
        if d > 0:
            time.sleep(d)
except (BrokenPipeError, KeyboardInterrupt):
    pass
