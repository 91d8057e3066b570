"""A service of two worker processes on the same cores, each calling an OpenBLAS pool of
POOL threads from one application thread (the pool's size set by OPENBLAS_NUM_THREADS, as
a team leaves it). The parent starts the workers (multiprocessing, fork) and waits; each
worker multiplies small matrices in a loop and counts them. Usage:
prefork_pools.py SECONDS [WORKERS]; prints one JSON line with the products per second."""

import multiprocessing
import sys
import time


def work(seconds, counter):
    import numpy as np

    a = np.random.rand(192, 192)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        a @ a
        n += 1
    with counter.get_lock():
        counter.value += n


def main():
    seconds = float(sys.argv[1])
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    counter = multiprocessing.Value("l", 0)
    procs = [multiprocessing.Process(target=work, args=(seconds, counter)) for _ in range(workers)]
    for p in procs:
        p.start()
    print("ready", flush=True)
    for p in procs:
        p.join()
    print(f'{{"products_per_s": {counter.value / seconds:.1f}}}', flush=True)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    main()
