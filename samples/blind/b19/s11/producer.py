"""Feeds support tickets as JSON lines on stdout (stands in for the upstream queue)."""
import json
import random
import sys
import time

rnd = random.Random(4)
WORDS = ("account billing refund password login error crash slow payment card invoice upgrade "
         "cancel subscription delivery late missing item broken screen battery charger app update "
         "please help urgent thanks again order tracking number support agent reply email phone").split()
msgs = []
for i in range(300):
    body = " ".join(rnd.choice(WORDS).capitalize() if rnd.random() < 0.1 else rnd.choice(WORDS)
                    for _ in range(rnd.randint(150, 250)))
    msgs.append({"id": i, "channel": rnd.choice(["email", "chat", "web"]), "subject": body[:40], "body": body})
out = sys.stdout
i = 0
try:
    while True:
        m = dict(msgs[i % 300]); m["seq"] = i
        out.write(json.dumps(m) + "\n")
        i += 1
        if i % 50 == 0:
            out.flush()
except (BrokenPipeError, OSError):
    pass
