"""Writes search requests as JSON lines to stdout (fed to the consumer's stdin)."""
import json
import random
import sys

out = sys.stdout
n = 0
try:
    while True:
        out.write(json.dumps({"id": n, "user": random.randint(0, 10**6), "k": 10}) + "\n")
        n += 1
        if n % 8 == 0:
            out.flush()
except (BrokenPipeError, KeyboardInterrupt):
    pass
