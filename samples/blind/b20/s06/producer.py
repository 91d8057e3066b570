"""Replays user activity batches as JSON lines on stdout, as fast as the consumer reads them."""
import json
import random
import sys
import time

rnd = random.Random(4)
batches = []
for _ in range(64):
    n = rnd.randint(400, 600)
    batches.append({"events": [[rnd.randrange(65536), rnd.randrange(128), round(rnd.uniform(0, 3), 2)]
                               for _ in range(n)]})
i = 0
out = sys.stdout
while True:
    b = batches[i % len(batches)]
    b["user"] = f"u{rnd.randrange(1_000_000)}"
    b["ts"] = time.time()
    try:
        out.write(json.dumps(b) + "\n")
        out.flush()
    except BrokenPipeError:
        break
    i += 1
