"""Cohort statistics worker: pulls jobs from a local broker child and aggregates a user-feature table."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json
import queue
import subprocess
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYOUT = os.environ.get("SVC_TABLE_LAYOUT", "rows")
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s10-records.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s10-ready")
USERS, FEATURES = 4_000_000, 32
HERE = os.path.dirname(os.path.abspath(__file__))


def load_table():
    rng = np.random.default_rng(0)
    table = rng.random((USERS, FEATURES), dtype=np.float32)
    if LAYOUT == "columns":
        table = np.asfortranarray(table)
    return table


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1 << 16)
        self.lock = threading.Lock()
        self.last = time.time()

    def add(self, t0, t1):
        with self.lock:
            self.f.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
            if t1 - self.last > 0.3:
                self.f.flush()
                self.last = t1


def run_job(table, job):
    sel = table[:, job["cols"]]
    score = sel @ np.asarray(job["weights"], dtype=np.float32)
    k = int(len(score) * 0.99)
    p99 = np.partition(score[::4], k // 4)[k // 4]
    return float(score.mean()), float(p99)


def worker(table, jobs, rec):
    while True:
        t0, job = jobs.get()
        run_job(table, job)
        rec.add(t0, time.time())


def main():
    stop = time.time() + LIFETIME
    table = load_table()
    run_job(table, {"cols": [0, 1, 2, 3], "weights": [1, 1, 1, 1]})
    jobs = queue.Queue(maxsize=8)
    rec = Recorder(STATS)
    broker = subprocess.Popen([sys.executable, os.path.join(HERE, "broker.py")], stdout=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True)
    for _ in range(WORKERS):
        threading.Thread(target=worker, args=(table, jobs, rec), daemon=True).start()
    open(READY, "w").close()

    def feed():
        for line in broker.stdout:
            jobs.put((time.time(), json.loads(line)))

    threading.Thread(target=feed, daemon=True).start()
    time.sleep(max(0.0, stop - time.time()))
    rec.f.flush()
    broker.kill()
    os._exit(0)


if __name__ == "__main__":
    main()
