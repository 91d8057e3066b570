"""Local job broker: emits cohort-statistics jobs as JSON lines on stdout."""
import json
import random
import sys

random.seed(23)
out = sys.stdout
i = 0
while True:
    cols = random.sample(range(32), 4)
    out.write(json.dumps({"job": i, "cols": cols, "weights": [round(random.random(), 3) for _ in cols]}) + "\n")
    out.flush()
    i += 1
