"""Fraud scoring worker: executor runs feature extraction + a linear model; in-process clients submit events."""
import multiprocessing as mp
import os
import random
import threading
import time
import zlib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
EXECUTOR = os.environ.get("SVC_EXECUTOR", "thread")
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
N_FEATURES = 1 << 12

WEIGHTS = np.random.default_rng(0).standard_normal(N_FEATURES).astype(np.float32)


def features(event):
    vec = [0.0] * N_FEATURES
    for key, value in event["fields"].items():
        token = f"{key}={value}"
        vec[zlib.crc32(token.encode()) % N_FEATURES] += 1.0
        for n in (2, 3, 4, 5):
            for i in range(len(token) - n + 1):
                h = hash(token[i:i + n]) % N_FEATURES
                vec[h] += 0.25
    history = event["history"]
    mean = sum(history) / len(history)
    var = sum((x - mean) ** 2 for x in history) / len(history)
    vec[0] += mean
    vec[1] += var
    return vec


def score(event):
    x = np.asarray(features(event), dtype=np.float32)
    return float(1.0 / (1.0 + np.exp(-(x @ WEIGHTS) * 1e-3)))


def make_event(rng):
    fields = {f"f{j}": f"{rng.choice('abcdefgh')}{rng.randrange(10**6)}-{rng.randrange(10**4)}" for j in range(120)}
    return {"fields": fields, "history": [rng.random() * 100 for _ in range(200)]}


def client(pool, seed, out):
    rng = random.Random(seed)
    events = [make_event(rng) for _ in range(50)]
    i = 0
    while True:
        t = time.time()
        pool.submit(score, events[i % 50]).result()
        now = time.time()
        out.append(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")
        i += 1



def shutdown():
    for child in mp.active_children():
        child.kill()
    os._exit(0)

def main():
    threading.Timer(LIFETIME, shutdown).start()
    if EXECUTOR == "process":
        pool = ProcessPoolExecutor(max_workers=WORKERS)
    else:
        pool = ThreadPoolExecutor(max_workers=WORKERS)
    warm = make_event(random.Random(0))
    list(pool.map(score, [warm] * (WORKERS * 2)))
    buffers = [[] for _ in range(CLIENTS)]
    for i in range(CLIENTS):
        threading.Thread(target=client, args=(pool, i, buffers[i]), daemon=True).start()
    if READY:
        open(READY, "w").close()
    with open(STATS, "a") as f:
        while True:
            time.sleep(0.25)
            for b in buffers:
                n = len(b)
                if n:
                    f.writelines(b[:n])
                    del b[:n]
            f.flush()


if __name__ == "__main__":
    main()
