"""Feeds review documents to the classifier on stdout, one JSON object per line."""
import json
import random
import sys

rng = random.Random(1)
SYL = ["ka", "lo", "mi", "ne", "ru", "ta", "sh", "ve", "po", "di", "qu", "ar", "en", "st", "ion", "ing"]
WORDS = ["".join(rng.choice(SYL) for _ in range(rng.randint(2, 7))) for _ in range(5000)]
PUNCT = [",", ".", "!", "?", ";", ""]
docs = []
for i in range(300):
    n = rng.randint(500, 700)
    docs.append(" ".join(rng.choice(WORDS).capitalize() if rng.random() < 0.1 else rng.choice(WORDS) + rng.choice(PUNCT)
                         for _ in range(n)))
bodies = [json.dumps(d) + "}" for d in docs]
out = sys.stdout.buffer
i = 0
try:
    while True:
        out.write(('{"id": %d, "text": %s\n' % (i, bodies[i % len(bodies)])).encode())
        i += 1
        if i % 8 == 0:
            out.flush()
except (BrokenPipeError, KeyboardInterrupt):
    pass
