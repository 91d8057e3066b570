"""A test target whose threads wait at the bottom of deep Python stacks (an async framework's
or a middleware chain's, taken to an extreme): py-spy's cost per sample grows with the
frames it reads, so its real cost is far above the CPU budget's per-thread estimate.
Prints "ready" once every thread is down; exits after --seconds."""

import argparse
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=2)
p.add_argument("--depth", type=int, default=600)
p.add_argument("--seconds", type=float, default=60)
args = p.parse_args()
stop = threading.Event()
down = threading.Barrier(args.threads + 1)


def descend(n: int) -> None:
    if n:
        descend(n - 1)
        return
    down.wait()
    while not stop.is_set():
        time.sleep(0.01)


for i in range(args.threads):
    threading.Thread(target=descend, args=(args.depth,), name=f"deep-{i}", daemon=True).start()
down.wait()
print("ready", flush=True)
stop.wait(args.seconds)
