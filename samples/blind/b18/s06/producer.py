"""Feeds sensor event records, one JSON object per line, to stdout."""
import json
import random
import sys

rng = random.Random(7)
lines = []
for i in range(200):
    fields = ";".join(f"ch{j}={rng.uniform(-50, 50):.4f}|{rng.choice('ABCD')}" for j in range(2000))
    lines.append(json.dumps({"device": f"dev-{i % 17}", "seq": i, "payload": fields}) + "\n")
block = "".join(lines).encode()
out = sys.stdout.buffer
try:
    while True:
        out.write(block)
        out.flush()
except (BrokenPipeError, OSError):
    pass
