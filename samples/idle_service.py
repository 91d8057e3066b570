"""idle: a service with almost no traffic. Its workers sleep between requests.

Four request threads each serve one small request (a NumPy product of a few
microseconds) every two seconds and sleep in between: two requests a second in all. There
is nothing to diagnose: the process is not busy, and diagnose must say so instead of
naming a bottleneck.

Expected verdict: idle.
"""

import numpy as np
from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("idle",)

W = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
X = np.ones((8, 64), dtype=np.float32)


def handle():
    return float((X @ W)[0, 0])


if __name__ == "__main__":
    args = parse_args(__doc__, threads=4)
    serve("idle_service", handle, args.threads, args.seconds, args.quiet, pace=2.0)
