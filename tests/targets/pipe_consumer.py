"""A queue consumer that listens on nothing: it reads JSON lines from its stdin (a producer's
pipe) and scores each with a little pure-Python work. Run as a pipeline:

    python pipe_consumer.py produce RATE SECONDS | python pipe_consumer.py consume WORK

``produce`` writes RATE lines a second; ``consume`` prints "ready" on stderr, then does WORK
thousand loop iterations per line. At a low rate it waits for work; at a rate past what one
core can score it is CPU-bound."""

from __future__ import annotations

import json
import sys
import time


def produce(rate: float, seconds: float) -> None:
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        sys.stdout.write(json.dumps({"id": n, "text": f"item {n}"}) + "\n")
        sys.stdout.flush()
        n += 1
        if rate > 0:
            time.sleep(1 / rate)


def score(item: dict, work: int) -> float:
    acc = 0.0
    for i in range(work * 1000):
        acc += (i * item["id"]) % 7
    return acc


def consume(work: int) -> None:
    print("ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        score(json.loads(line), work)


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        produce(float(sys.argv[2]), float(sys.argv[3]))
    else:
        consume(int(sys.argv[2]))
