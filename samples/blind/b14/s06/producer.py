"""Feeds scoring jobs, one JSON object per line, to stdout."""
import json
import random
import sys

rnd = random.Random(1)
out = sys.stdout
try:
    while True:
        out.write(json.dumps({"job": rnd.randint(0, 10**9), "segment": rnd.randint(0, 127)}) + "\n")
except (BrokenPipeError, KeyboardInterrupt):
    pass
