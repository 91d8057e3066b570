"""Writes a stream of JSON review events to stdout."""
import json
import random
import sys

random.seed(5)
WORDS = ("fast delivery great quality poor broken refund love hate ok fine excellent terrible price value "
         "size fit color late early support return again never always recommend battery screen sound").split()
lines = []
for i in range(2000):
    ev = {"id": i, "user": random.randrange(10**6), "rating": random.randint(1, 5),
          "title": " ".join(random.choices(WORDS, k=6)),
          "text": " ".join(random.choices(WORDS, k=random.randint(60, 120))),
          "tags": random.sample(WORDS, 4)}
    lines.append(json.dumps(ev))
chunk = ("\n".join(lines) + "\n").encode()
out = sys.stdout.buffer
try:
    while True:
        out.write(chunk)
        out.flush()
except (BrokenPipeError, OSError):
    pass
