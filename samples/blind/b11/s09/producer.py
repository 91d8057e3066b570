"""Feeds review documents, one JSON line each, to the service's stdin."""
import json
import random
import sys

random.seed(7)
WORDS = [
    "battery", "screen", "delivery", "excellent", "broken", "refund", "quality", "cheap", "sturdy", "lovely",
    "disappointing", "packaging", "customer", "service", "fast", "slow", "works", "perfectly", "stopped",
    "charging", "recommend", "avoid", "gift", "colour", "size", "fits", "returned", "amazing", "terrible",
]
docs = []
for i in range(200):
    text = " ".join(random.choice(WORDS) for _ in range(1500))
    docs.append((json.dumps({"id": i, "text": text}) + "\n").encode())
out = sys.stdout.buffer
try:
    while True:
        for d in docs:
            out.write(d)
        out.flush()
except (BrokenPipeError, OSError):
    pass
