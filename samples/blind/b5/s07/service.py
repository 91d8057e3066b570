"""Candidate-retrieval worker: reads query jobs (JSON lines) from stdin, scores the shard's candidate
items against the query vector with NumPy in a small thread pool, writes results to a log.

Env:
  SVC_THREADS     scoring threads (default 2)
  SVC_ITEMS       catalog size (default 1_000_000)
  SVC_CANDIDATES  candidates scored per query (default 400_000)
  SVC_LAYOUT      "catalog" = item table kept in catalog-id order, candidates gathered through the
                  popularity index; "ranked" = table stored in popularity order at load time
"""
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

THREADS = int(os.environ.get("SVC_THREADS", "2"))
ITEMS = int(os.environ.get("SVC_ITEMS", "1000000"))
CAND = int(os.environ.get("SVC_CANDIDATES", "400000"))
LAYOUT = os.environ.get("SVC_LAYOUT", "catalog")
DIM = 64
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")

rng = np.random.default_rng(4)
table = rng.standard_normal((ITEMS, DIM), dtype=np.float32)
by_popularity = rng.permutation(ITEMS)  # item ids, most popular first
if LAYOUT == "ranked":
    table = table[by_popularity]  # one-time reorder at load

_tls = threading.local()


def candidates():
    if LAYOUT == "ranked":
        return table[:CAND]
    buf = getattr(_tls, "buf", None)
    if buf is None:
        buf = _tls.buf = np.empty((CAND, DIM), np.float32)
    np.take(table, by_popularity[:CAND], axis=0, out=buf)
    return buf


def score(job):
    q = np.asarray(job["vec"], dtype=np.float32)
    c = candidates()
    s = c @ q
    top = np.argpartition(-s, 50)[:50]
    return {"id": job["id"], "items": by_popularity[top].tolist()}


def main():
    out = open(STATS, "a", buffering=1 << 16) if STATS else None
    results = open(os.devnull, "w")
    rec_mu = threading.Lock()
    slots = threading.BoundedSemaphore(THREADS * 2)
    last = [time.time()]
    pool = ThreadPoolExecutor(THREADS)

    def run(job, t0):
        try:
            r = score(job)
            ok = "ok"
        except Exception:
            r, ok = None, "err"
        t1 = time.time()
        with rec_mu:
            results.write(json.dumps(r) + "\n")
            if out:
                out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} {ok}\n")
                if t1 - last[0] > 0.3:
                    out.flush()
                    last[0] = t1
        slots.release()

    score({"id": 0, "vec": [0.0] * DIM})
    if READY:
        open(READY, "w").close()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        slots.acquire()
        pool.submit(run, job, time.time())
    pool.shutdown(wait=True)
    if out:
        out.flush()


if __name__ == "__main__":
    main()
