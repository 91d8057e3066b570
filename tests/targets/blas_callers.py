"""Eight application threads, each multiplying matrices in a loop through NumPy's OpenBLAS,
whose pool size is set the way a team leaves it (OPENBLAS_NUM_THREADS, given here before
NumPy loads). Usage: blas_callers.py POOL SECONDS; prints "ready", then one JSON line with
the products per second."""

import os
import sys
import threading
import time

POOL, SECONDS = sys.argv[1], float(sys.argv[2])
os.environ["OPENBLAS_NUM_THREADS"] = POOL

import numpy as np  # noqa: E402 - the pool's size is read when the library loads

THREADS = 8
done = [0] * THREADS


def work(i: int, end: float) -> None:
    a = np.random.rand(256, 256)
    n = 0
    while time.monotonic() < end:
        a @ a
        n += 1
    done[i] = n


def main() -> None:
    end = time.monotonic() + SECONDS
    threads = [threading.Thread(target=work, args=(i, end)) for i in range(THREADS)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for t in threads:
        t.join()
    print(f'{{"products_per_s": {sum(done) / SECONDS:.1f}}}', flush=True)


if __name__ == "__main__":
    main()
