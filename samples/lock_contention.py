"""lock: every request thread runs the model under one shared lock (MODEL_LOCK).

Expected verdict: lock (mutex). The model call is a NumPy matrix product, which releases
the GIL, so waiters queue on MODEL_LOCK, not on the GIL. BLAS is held to one thread so the
lock is the only story.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import threading

import numpy as np
from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("lock/mutex",)

RNG = np.random.default_rng(0)
WEIGHTS = [RNG.standard_normal((384, 384)).astype(np.float32) for _ in range(4)]
MODEL_LOCK = threading.Lock()


def predict(x):
    for w in WEIGHTS:
        x = np.maximum(x @ w, 0.0)
    return x


def handle():
    x = np.ones((64, 384), dtype=np.float32)
    with MODEL_LOCK:  # one model, one lock: the bottleneck
        y = predict(x)
    return float(y[0, 0])


if __name__ == "__main__":
    args = parse_args(__doc__, threads=8)
    serve("lock_contention", handle, args.threads, args.seconds, args.quiet)
