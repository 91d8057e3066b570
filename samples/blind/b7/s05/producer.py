"""Replays support-ticket events as JSON lines on stdout (the upstream export job)."""
import json
import random
import sys
import time

WORDS = ("printer offline again after update cannot connect to vpn from home laptop battery drains fast "
         "invoice missing line items please resend order arrived damaged box crushed screen cracked "
         "request access to shared drive for new hire onboarding password expired locked out").split()
rng = random.Random(7)
i = 0
out = sys.stdout
try:
    while True:
        n = rng.randint(60, 110)
        out.write(json.dumps({"ticket": i, "ts": time.time(), "body": " ".join(rng.choice(WORDS) for _ in range(n))}) + "\n")
        i += 1
        if i % 16 == 0:
            out.flush()
except (BrokenPipeError, KeyboardInterrupt):
    pass
