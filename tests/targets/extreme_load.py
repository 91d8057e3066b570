"""A target at the extremes (pure Python standard library, runs on 3.8+). Every part is off
unless asked for:

--idle N      N threads parked on an Event, as an inference server's pools (500+ threads)
--busy N      N threads running Python code in a loop
--depth D     the busy threads recurse D frames deep before their loop
--churn HZ    threads started HZ times a second, each gone 50 ms later
--churn-life S  ... each gone S seconds later instead (a thread per request)
--fork N      N worker processes forked at start, each running the --busy threads; the
              parent only waits (a gunicorn-style master)
--saturate    the busy threads hash 1 MiB buffers, which releases the GIL: every core busy
--seconds S   exit after S seconds

Prints "ready" once everything runs. Forked workers die with the parent (PR_SET_PDEATHSIG).
"""

import argparse
import ctypes
import ctypes.util
import hashlib
import os
import signal
import sys
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--idle", type=int, default=0)
p.add_argument("--busy", type=int, default=0)
p.add_argument("--depth", type=int, default=0)
p.add_argument("--churn", type=float, default=0.0)
p.add_argument("--churn-life", type=float, default=0.05)
p.add_argument("--fork", type=int, default=0)
p.add_argument("--saturate", action="store_true")
p.add_argument("--seconds", type=float, default=60)
args = p.parse_args()

stop = threading.Event()
sys.setrecursionlimit(max(1000, args.depth + 200))
BUFFER = os.urandom(1 << 20)


def work():
    if args.saturate:
        while not stop.is_set():
            hashlib.sha256(BUFFER).digest()
    else:
        x = 0
        while not stop.is_set():
            x = (x * 31 + 7) % 1000003


def down(n):
    if n <= 0:
        work()
    else:
        down(n - 1)


def busy():
    down(args.depth)


def churn():
    i = 0
    period = 1.0 / args.churn
    while not stop.is_set():
        t = threading.Thread(
            target=time.sleep, args=(args.churn_life,), name=f"churn-{i}", daemon=True
        )
        t.start()
        i += 1
        stop.wait(period)


def start_threads():
    for i in range(args.idle):
        threading.Thread(target=stop.wait, name=f"idle-{i}", daemon=True).start()
    for i in range(args.busy):
        threading.Thread(target=busy, name=f"busy-{i}", daemon=True).start()
    if args.churn:
        threading.Thread(target=churn, name="spawner", daemon=True).start()


workers = []
for _ in range(args.fork):
    pid = os.fork()
    if pid == 0:  # a worker: dies with its parent, runs the busy threads until told to stop
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        start_threads()
        stop.wait(args.seconds)
        os._exit(0)
    workers.append(pid)

if not workers:
    start_threads()
print("ready", flush=True)
stop.wait(args.seconds)
stop.set()
for pid in workers:
    os.kill(pid, signal.SIGTERM)
time.sleep(0.1)
sys.exit(0)
