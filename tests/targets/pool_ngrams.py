"""Eight pool threads, each turning a text into hashed character n-gram counts in plain
Python, then scoring them with one NumPy dot over 16,384 weights (a few percent of the CPU:
no model call to be seen). MODE names the function that calls the counting only: ``featurize``
(a name that says preprocessing) or ``step``; the code is the same. Prints "ready", then runs SECONDS.

    python pool_ngrams.py featurize|step SECONDS"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

DIM = 16384
WEIGHTS = np.random.default_rng(0).standard_normal(DIM).astype(np.float32)
TEXTS = [" ".join(f"w{(i * 31 + j * 7) % 997}" for j in range(120)) for i in range(32)]


def counts(text: str) -> np.ndarray:
    vec = np.zeros(DIM, dtype=np.float32)
    for n in (2, 3, 4):
        for i in range(len(text) - n + 1):
            vec[hash(text[i : i + n]) % DIM] += 1.0
    return vec


def featurize(text: str) -> np.ndarray:
    return counts(text)


def step(text: str) -> np.ndarray:
    return counts(text)


def score(text: str, fn: Callable[[str], np.ndarray]) -> float:
    return float(fn(text) @ WEIGHTS)


def main() -> None:
    mode, seconds = sys.argv[1], float(sys.argv[2])
    fn = featurize if mode == "featurize" else step
    stop = time.monotonic() + seconds

    def worker(k: int) -> None:
        i = k
        while time.monotonic() < stop:
            score(TEXTS[i % len(TEXTS)], fn)
            i += 1

    with ThreadPoolExecutor(8) as pool:
        for k in range(8):
            pool.submit(worker, k)
        threading.Timer(0.5, lambda: print("ready", flush=True)).start()


if __name__ == "__main__":
    main()
