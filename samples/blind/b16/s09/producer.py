"""Feeds support-ticket messages as JSON lines on stdout at a fixed arrival rate."""
import json
import os
import random
import sys
import time

RATE = float(os.environ.get("SVC_ARRIVAL_RATE", "20"))
MAX_S = float(os.environ.get("SVC_PRODUCER_MAX_S", "300"))
WORDS = ["refund", "order", "late", "broken", "account", "password", "charge", "card", "ship", "track",
         "cancel", "upgrade", "plan", "invoice", "login", "error", "app", "crash", "delivery", "address"]

rnd = random.Random(9)
start = time.time()
n = 0
while time.time() - start < MAX_S:
    n += 1
    text = " ".join(rnd.choices(WORDS, k=rnd.randint(12, 40)))
    try:
        sys.stdout.write(json.dumps({"id": n, "sent": time.time(), "text": text}) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        break
    nxt = start + n / RATE
    time.sleep(max(0.0, nxt - time.time()))
