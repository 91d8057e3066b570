"""Review-tagging pipeline: featurize -> score -> collect, one multiprocessing stage per step."""
import functools
import hashlib
import multiprocessing as mp
import os
import random
import re
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
TOKEN_CACHE = os.environ.get("SVC_TOKEN_CACHE", "0") == "1"
N_BUCKETS = 4096
TOKEN_RE = re.compile(r"[a-z0-9']+")
STOP = {"the", "a", "an", "and", "or", "of", "to", "is", "it", "in"}


def make_docs(n=256, seed=1):
    rnd = random.Random(seed)
    words = [''.join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(3000)]
    words += list(STOP)
    return [" ".join(rnd.choice(words) for _ in range(rnd.randint(1100, 1300))).capitalize() + "." for _ in range(n)]


def bucket(s):
    return int(hashlib.md5(s.encode()).hexdigest()[:8], 16) % N_BUCKETS


def token_hashes(t):
    return bucket(t), [bucket(t[j:j + 3]) for j in range(len(t) - 2)]


if TOKEN_CACHE:
    token_hashes = functools.lru_cache(maxsize=1 << 16)(token_hashes)


def featurize(text):
    toks = [t for t in TOKEN_RE.findall(text.lower()) if t not in STOP]
    feats = {}
    prev = None
    for t in toks:
        h, tri = token_hashes(t)
        feats[h] = feats.get(h, 0.0) + 1.0
        if prev is not None:
            h2 = (prev * 31 + h) % N_BUCKETS
            feats[h2] = feats.get(h2, 0.0) + 0.5
        prev = h
        for h3 in tri:
            feats[h3] = feats.get(h3, 0.0) + 0.25
    norm = sum(v * v for v in feats.values()) ** 0.5 or 1.0
    return list(feats.keys()), [v / norm for v in feats.values()]


def parse_stage(inq, outq):
    while True:
        item = inq.get()
        if item is None:
            break
        rid, t0, text = item
        idx, vals = featurize(text)
        outq.put((rid, t0, idx, vals))


def score_stage(inq, outq):
    rng = np.random.default_rng(0)
    W = rng.standard_normal((N_BUCKETS, 8)).astype(np.float32)
    while True:
        item = inq.get()
        if item is None:
            break
        rid, t0, idx, vals = item
        s = np.asarray(vals, dtype=np.float32) @ W[np.asarray(idx)]
        outq.put((rid, t0, int(np.argmax(s))))


def main():
    ctx = mp.get_context("fork")
    q_raw, q_feat, q_out = ctx.Queue(64), ctx.Queue(64), ctx.Queue()
    parsers = [ctx.Process(target=parse_stage, args=(q_raw, q_feat), name="parse", daemon=True)]
    scorer = ctx.Process(target=score_stage, args=(q_feat, q_out), name="score", daemon=True)
    for p in parsers + [scorer]:
        p.start()
    docs = make_docs()
    rec = open(os.environ.get("SVC_STATS_PATH", "/dev/null"), "a", buffering=1)
    stop = time.time() + LIFETIME

    import threading

    def feed():
        n = 0
        while time.time() < stop:
            q_raw.put((n, time.time(), docs[n % len(docs)]))
            n += 1

    threading.Thread(target=feed, name="feeder", daemon=True).start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    while time.time() < stop:
        try:
            rid, t0, label = q_out.get(timeout=1)
        except Exception:
            continue
        now = time.time()
        rec.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
    for p in parsers + [scorer]:
        p.terminate()
    os._exit(0)


if __name__ == "__main__":
    main()
