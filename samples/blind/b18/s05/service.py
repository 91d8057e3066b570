"""Document scoring worker: in-process clients submit document ids to an executor that
builds hashed n-gram features in Python and scores them with a linear model."""
import os
import random
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
import multiprocessing as mp

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
EXECUTOR = os.environ.get("SVC_EXECUTOR", "thread")
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
BUCKETS = 1 << 14

_rng = random.Random(0)
_WORDS = ["".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(3, 9))) for _ in range(3000)]
CORPUS = [" ".join(_rng.choice(_WORDS) for _ in range(1500)) for _ in range(64)]
WEIGHTS = np.random.default_rng(0).standard_normal(BUCKETS).astype(np.float32)


def featurize(text):
    counts = {}
    toks = text.lower().split()
    for i, t in enumerate(toks):
        h = hash(t) % BUCKETS
        counts[h] = counts.get(h, 0) + 1
        if i:
            h2 = hash((toks[i - 1], t)) % BUCKETS
            counts[h2] = counts.get(h2, 0) + 1
        for j in range(len(t) - 2):
            h3 = hash(t[j:j + 3]) % BUCKETS
            counts[h3] = counts.get(h3, 0) + 1
    return counts


def score_doc(doc_id):
    counts = featurize(CORPUS[doc_id])
    idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    val = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
    return float(np.dot(WEIGHTS[idx], np.log1p(val)))


class Recorder:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1 << 16)
        self.lock = threading.Lock()
        self.last = time.time()

    def add(self, t_end, ms):
        with self.lock:
            self.f.write(f"{t_end:.4f} {ms:.3f} ok\n")
            if t_end - self.last > 0.5:
                self.f.flush()
                self.last = t_end


def client(pool, rec, stop, seed):
    r = random.Random(seed)
    while not stop.is_set():
        t0 = time.time()
        pool.submit(score_doc, r.randrange(len(CORPUS))).result()
        t1 = time.time()
        rec.add(t1, (t1 - t0) * 1000)


def main():
    if EXECUTOR == "process":
        pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=mp.get_context("fork"))
    else:
        pool = ThreadPoolExecutor(max_workers=WORKERS)
    list(pool.map(score_doc, range(WORKERS)))
    rec = Recorder(STATS)
    stop = threading.Event()
    threads = [threading.Thread(target=client, args=(pool, rec, stop, i), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    time.sleep(LIFETIME)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    rec.f.flush()
    pool.shutdown(wait=False, cancel_futures=True)
    os._exit(0)


if __name__ == "__main__":
    main()
