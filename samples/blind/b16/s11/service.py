"""Vector search pipeline: a dispatcher feeds query jobs to two worker processes that search a partitioned embedding index."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import multiprocessing as mp
import queue
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
NPROBE = int(os.environ.get("SVC_NPROBE", "16"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/b16-s11-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/b16-s11-ready")
LISTS, PER_LIST, DIM, K, INFLIGHT = 16, 65536, 64, 10, 4


def build_index():
    rng = np.random.default_rng(0)
    centroids = rng.standard_normal((LISTS, DIM)).astype(np.float32) * 2
    vecs = np.empty((LISTS, PER_LIST, DIM), np.float32)
    for i in range(LISTS):
        vecs[i] = centroids[i] + rng.standard_normal((PER_LIST, DIM), dtype=np.float32)
    return centroids, vecs


CENTROIDS, VECS = build_index()


def search(q):
    probe = np.argsort(-(CENTROIDS @ q))[:NPROBE]
    best_s, best_i = [], []
    for lst in probe:
        s = VECS[lst] @ q
        top = np.argpartition(-s, K)[:K]
        best_s.append(s[top])
        best_i.append(top + lst * PER_LIST)
    s, i = np.concatenate(best_s), np.concatenate(best_i)
    return i[np.argsort(-s)[:K]]


def worker(jobs, results):
    while True:
        job = jobs.get()
        if job is None:
            return
        jid, sent, q = job
        ids = search(q)
        results.put((jid, sent, ids))


def main():
    ctx = mp.get_context("fork")
    jobs, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(jobs, results), name=f"search-{i}") for i in range(2)]
    for p in procs:
        p.start()
    rng = np.random.default_rng(1)
    out = open(STATS, "a", buffering=1 << 16)
    deadline = time.time() + LIFETIME
    next_id = 0
    for _ in range(INFLIGHT):
        jobs.put((next_id, time.time(), rng.standard_normal(DIM).astype(np.float32)))
        next_id += 1
    open(READY, "w").close()
    last_flush = time.time()
    while time.time() < deadline:
        try:
            jid, sent, ids = results.get(timeout=0.5)
        except queue.Empty:
            continue
        now = time.time()
        out.write(f"{now:.4f} {(now - sent) * 1000:.3f} ok\n")
        jobs.put((next_id, time.time(), rng.standard_normal(DIM).astype(np.float32)))
        next_id += 1
        if now - last_flush > 0.3:
            out.flush()
            last_flush = now
    out.close()
    for p in procs:
        p.terminate()


if __name__ == "__main__":
    main()
