"""Feeds review texts to the consumer's stdin as JSON lines, as fast as the pipe takes them."""
import json
import random
import sys
import time

W = ("great product terrible service fast delivery broken screen love it would buy again "
     "refund requested battery lasts long poor quality excellent value too expensive").split()
out = sys.stdout
i = 0
while True:
    n = random.randint(40, 90)
    out.write(json.dumps({"id": i, "ts": time.time(), "text": " ".join(random.choices(W, k=n))}) + "\n")
    i += 1
    if i % 8 == 0:
        out.flush()
