"""Offer-ranking worker library with an in-process load driver (no port).

Each request carries a user vector and a candidate slate; candidates are scored in chunks in parallel
worker processes, then the slate is re-ranked with a diversity penalty.
"""
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
POOL_MODE = os.environ.get("SVC_POOL", "per_request")
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
N_OFFERS, DIM, SLATE, HID = 20_000, 64, 2000, 256

rng = np.random.default_rng(0)
OFFERS = rng.standard_normal((N_OFFERS, DIM)).astype(np.float32)
BIAS = rng.standard_normal(N_OFFERS).astype(np.float32) * 0.1
W1 = (rng.standard_normal((2 * DIM, HID)) / np.sqrt(2 * DIM)).astype(np.float32)
W2 = (rng.standard_normal(HID) / np.sqrt(HID)).astype(np.float32)


def score_chunk(args):
    user, idx = args
    e = OFFERS[idx]
    x = np.concatenate([e, e * user], axis=1)
    h = np.tanh(x @ W1)
    return h @ W2 + BIAS[idx] + 0.1 * (e @ user)


_shared_pool = ProcessPoolExecutor(max_workers=2) if POOL_MODE == "shared" else None


def rank(user, cand, k=20):
    chunks = [(user, c) for c in np.array_split(cand, 4)]
    if _shared_pool is not None:
        parts = list(_shared_pool.map(score_chunk, chunks))
    else:
        with ProcessPoolExecutor(max_workers=2) as ex:
            parts = list(ex.map(score_chunk, chunks))
    scores = np.concatenate(parts)
    order = np.argsort(-scores)[: k * 3]
    chosen = []
    for i in order:
        if all(abs(int(cand[i]) - int(cand[j])) > 3 for j in chosen):
            chosen.append(i)
        if len(chosen) == k:
            break
    return cand[chosen]


stats = open(STATS, "a", buffering=1) if STATS else None
stats_mu = threading.Lock()
done = [0]
t_start = time.time()
stop = threading.Event()


def client(seed):
    r = np.random.default_rng(seed)
    while not stop.is_set():
        user = r.standard_normal(DIM).astype(np.float32)
        cand = r.choice(N_OFFERS, SLATE, replace=False)
        t0 = time.time()
        try:
            rank(user, cand)
            ok = "ok"
        except Exception:
            ok = "err"
        t1 = time.time()
        with stats_mu:
            done[0] += 1
            if stats:
                stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} {ok}\n")


def finish(*_):
    stop.set()
    print(json.dumps({"requests": done[0], "uptime_s": round(time.time() - t_start, 1)}), flush=True)
    if stats:
        with stats_mu:
            stats.flush()
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, finish)
    threading.Timer(LIFETIME, finish).start()
    rank(np.ones(DIM, np.float32), np.arange(SLATE))
    if READY:
        open(READY, "w").close()
    for i in range(CLIENTS):
        threading.Thread(target=client, args=(i,), daemon=True).start()
    while True:
        time.sleep(1)
