"""A test target one of whose threads exits while it is profiled (a thread pool dropping an
idle worker): two threads that compute, one named "pool-worker" that waits and exits after
--exit-after seconds. Prints "ready" once every thread runs; exits after --seconds."""

import argparse
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--exit-after", type=float, default=2.0)
p.add_argument("--seconds", type=float, default=30)
args = p.parse_args()
stop = threading.Event()


def compute() -> None:
    while not stop.is_set():
        sum(i * i for i in range(20000))
        time.sleep(0.005)


def pool_worker() -> None:
    time.sleep(args.exit_after)


for i in range(2):
    threading.Thread(target=compute, name=f"compute-{i}", daemon=True).start()
threading.Thread(target=pool_worker, name="pool-worker", daemon=True).start()
print("ready", flush=True)
stop.wait(args.seconds)
stop.set()
