"""Test targets for the perf collectors: small services with one known behaviour each.

    python perf_target.py WORKLOAD [--threads N] [--seconds S]

- ``lock``: request threads run ``predict()`` (NumPy matrix products, which release the
  GIL) while holding one shared lock, MODEL_LOCK: the others wait in futex() on it.
- ``oversub``: more request threads than cores, each multiplying matrices with the GIL
  released: runnable threads queue for a core (run-queue delay, involuntary switches).
- ``gemm``: large matrix products on OpenBLAS's own thread pool (numpy's wheel ships it
  as ``libscipy_openblas64_``): native compute, BLAS/GEMM frames on the CPU.
- ``gil``: request threads run pure-Python loops: they take turns on the GIL.

BLAS is held to one thread except for ``gemm``. Prints "ready" once every thread runs,
exits after --seconds and prints {"rps": ...} (requests per second after --warmup) on its
last line.
"""

import os
import sys

WORKLOAD = sys.argv[1] if len(sys.argv) > 1 else ""
if WORKLOAD != "gemm":
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("workload", choices=["lock", "oversub", "gemm", "gil"])
p.add_argument("--threads", type=int, default=6)
p.add_argument("--seconds", type=float, default=30)
p.add_argument("--warmup", type=float, default=0.0, help="seconds not counted in rps")
args = p.parse_args()

RNG = np.random.default_rng(0)
SMALL = RNG.standard_normal((256, 256)).astype(np.float32)
BIG = RNG.standard_normal((768, 768)).astype(np.float32)
MODEL_LOCK = threading.Lock()


def predict(x):
    for _ in range(4):
        x = np.maximum(x @ SMALL, 0.0)
    return x


def handle_lock():
    x = np.ones((64, 256), dtype=np.float32)
    with MODEL_LOCK:  # the shared lock: the bottleneck
        predict(x)


def handle_oversub():
    predict(np.ones((64, 256), dtype=np.float32))


def handle_gemm():
    BIG @ BIG


def handle_gil():
    total = 0
    for i in range(20000):
        total += i * i
    return total


HANDLERS = {"lock": handle_lock, "oversub": handle_oversub, "gemm": handle_gemm, "gil": handle_gil}
handler = HANDLERS[args.workload]
stop = threading.Event()
done = [0] * args.threads


def worker(i):
    while not stop.is_set():
        handler()
        done[i] += 1


threads = [
    threading.Thread(target=worker, args=(i,), name=f"handler-{i}", daemon=True)
    for i in range(args.threads)
]
start = time.perf_counter()
for t in threads:
    t.start()
print("ready", flush=True)
warm = 0
if args.warmup > 0:
    stop.wait(args.warmup)
    warm, start = sum(done), time.perf_counter()
stop.wait(max(0.0, args.seconds - args.warmup))
stop.set()
elapsed = time.perf_counter() - start
count = sum(done) - warm
for t in threads:
    t.join(5)
print(json.dumps({"workload": args.workload, "rps": round(count / elapsed, 2)}), flush=True)
