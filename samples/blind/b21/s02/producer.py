"""Writes review records as JSON lines to stdout."""
import json
import random
import sys

random.seed(3)
WORDS = ("the battery lasts long and the screen is bright but the speaker sounds tinny when the volume "
         "goes past half delivery was quick packaging decent though the manual missed a few steps overall "
         "good value for money would recommend to friends who need something reliable everyday").split()


def record(i):
    text = " ".join(random.choice(WORDS) for _ in range(random.randint(800, 1000)))
    return json.dumps({"id": i, "text": text.capitalize() + ".", "rating": random.randint(1, 5),
                       "helpful": random.randint(0, 300)}) + "\n"


lines = [record(i).encode() for i in range(500)]
out = sys.stdout.buffer
while True:
    for ln in lines:
        out.write(ln)
    out.flush()
