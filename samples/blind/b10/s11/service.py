"""Retrieval worker: pulls query batches from the local broker and returns top-k items."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
BROKER_PORT = int(os.environ.get("SVC_BROKER_PORT", "18861"))
TOPK = os.environ.get("SVC_TOPK", "sort")
CONSUMERS = int(os.environ.get("SVC_CONSUMERS", "2"))
N_ITEMS, DIM, BATCH = 100_000, 64, 32

rng = np.random.default_rng(4)
corpus = rng.standard_normal((N_ITEMS, DIM), dtype=np.float32)


def top_items(scores, k):
    if TOPK == "partition":
        idx = np.argpartition(scores, -k, axis=1)[:, -k:]
        part = np.take_along_axis(scores, idx, axis=1)
        order = np.argsort(-part, axis=1)
        return np.take_along_axis(idx, order, axis=1)
    return np.argsort(-scores, axis=1)[:, :k]


def run_job(job):
    q = np.random.default_rng(job["seed"]).standard_normal((BATCH, DIM), dtype=np.float32)
    scores = q @ corpus.T
    return top_items(scores, job["k"])


def consumer(stop, rec, rec_lock):
    s = socket.create_connection(("127.0.0.1", BROKER_PORT))
    f = s.makefile("rwb")
    while time.time() < stop:
        t = time.time()
        f.write(b"GET\n"); f.flush()
        job = json.loads(f.readline())
        top = run_job(job)
        f.write(f"ACK {job['id']} {int(top[0, 0])}\n".encode()); f.flush()
        f.readline()
        now = time.time()
        with rec_lock:
            rec.write(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")


def main():
    broker = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "broker.py")])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", BROKER_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    rec = open(os.environ.get("SVC_STATS_PATH", "/dev/null"), "a", buffering=1)
    rec_lock = threading.Lock()
    stop = time.time() + LIFETIME
    threads = [threading.Thread(target=consumer, args=(stop, rec, rec_lock), name=f"consumer-{i}", daemon=True)
               for i in range(CONSUMERS)]
    for th in threads:
        th.start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    for th in threads:
        th.join()
    broker.terminate()
    os._exit(0)


if __name__ == "__main__":
    main()
