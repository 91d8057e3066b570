"""Feeds review records (JSON lines) to the classifier on stdout."""
import json
import random
import sys

rng = random.Random(7)
VOCAB = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
LINES = []
for i in range(400):
    words = [rng.choice(VOCAB) for _ in range(rng.randint(300, 420))]
    LINES.append(json.dumps({"id": i, "lang": "en", "text": " ".join(words)}) + "\n")
out = sys.stdout
i = 0
try:
    while True:
        out.write(LINES[i % len(LINES)])
        i += 1
        if i % 16 == 0:
            out.flush()
except (BrokenPipeError, OSError):
    pass
