"""A test target with known thread states (pure Python, runs on 3.8+).

- "spinner": a busy loop (state R, utime rising);
- "holder": takes LOCK and sleeps with it;
- "waiter-0..2": block on LOCK (three threads, one futex address up to Python 3.12);
- "late": started after --late seconds, busy for a while in hashing, which releases the GIL (a
  Python busy loop would take turns with the spinner for the GIL, and the spinner would wait in
  state S half the time).
Prints "ready" once every thread is started; exits after --seconds.
"""

import argparse
import hashlib
import sys
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--late", type=float, default=2.0)
p.add_argument("--thread-name", default=None, help="name for the spinner thread")
args = p.parse_args()

LOCK = threading.Lock()
stop = threading.Event()


def spinner():
    x = 0
    while not stop.is_set():
        x += 1


def holder():
    with LOCK:
        stop.wait(args.seconds)


def waiter():
    with LOCK:
        pass


def late():
    end = time.time() + 3
    block = b"x" * (1 << 20)
    while time.time() < end and not stop.is_set():
        hashlib.sha256(block).digest()
    stop.wait()


threading.Thread(target=spinner, name=args.thread_name or "spinner", daemon=True).start()
threading.Thread(target=holder, name="holder", daemon=True).start()
time.sleep(0.2)
for i in range(3):
    threading.Thread(target=waiter, name=f"waiter-{i}", daemon=True).start()
print("ready", flush=True)
time.sleep(args.late)
threading.Thread(target=late, name="late", daemon=True).start()
stop.wait(max(0.0, args.seconds - args.late))
stop.set()
sys.exit(0)
