"""Review sentiment worker (asyncio): client coroutines hand reviews to executor threads that featurise and score them."""
import asyncio
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
FEATURIZER = os.environ.get("SVC_FEATURIZER", "python")
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/b16-s10-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/b16-s10-ready")
BUCKETS = 4096
NGRAMS = (2, 3, 4)


def ngram_counts_py(text):
    """Hashed character n-gram counts (fastText-style bag of n-grams)."""
    codes = text.lower().encode("latin-1", "replace")
    counts = [0] * BUCKETS
    for n in NGRAMS:
        for i in range(len(codes) - n + 1):
            h = 0
            for c in codes[i:i + n]:
                h = (h * 131 + c) & 0xFFFFFFFF
            counts[h % BUCKETS] += 1
    return np.asarray(counts, dtype=np.float32)


def ngram_counts_np(text):
    """Same hashed n-gram counts computed with array operations."""
    codes = np.frombuffer(text.lower().encode("latin-1", "replace"), dtype=np.uint8).astype(np.uint64)
    counts = np.zeros(BUCKETS, dtype=np.float32)
    for n in NGRAMS:
        m = len(codes) - n + 1
        if m <= 0:
            continue
        h = np.zeros(m, dtype=np.uint64)
        for k in range(n):
            h = (h * 131 + codes[k:k + m]) & 0xFFFFFFFF
        counts += np.bincount((h % BUCKETS).astype(np.int64), minlength=BUCKETS).astype(np.float32)
    return counts


featurize = ngram_counts_np if FEATURIZER == "numpy" else ngram_counts_py

rng = np.random.default_rng(3)
W1 = (rng.standard_normal((BUCKETS, 32)) * 0.02).astype(np.float32)
W2 = rng.standard_normal((32, 3)).astype(np.float32)


def handle(text):
    x = featurize(text)
    x /= max(1.0, float(x.sum()))
    logits = np.tanh(x @ W1) @ W2
    return int(logits.argmax())


WORDS = ["great", "terrible", "battery", "screen", "delivery", "price", "quality", "broke", "love", "return",
         "fast", "slow", "charger", "support", "refund", "works", "perfect", "cheap", "sturdy", "noisy"]


def make_review(rnd):
    return " ".join(rnd.choice(WORDS) + rnd.choice(["", "", ",", ".", "!"]) for _ in range(rnd.randint(120, 180)))


async def client(i, loop, pool, out, deadline):
    rnd = random.Random(i)
    reviews = [make_review(rnd) for _ in range(20)]
    while time.time() < deadline:
        t0 = time.time()
        await loop.run_in_executor(pool, handle, rnd.choice(reviews))
        t1 = time.time()
        out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


async def flusher(out, deadline):
    while time.time() < deadline:
        await asyncio.sleep(0.3)
        out.flush()


async def main():
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="review")
    handle(make_review(random.Random(99)))
    out = open(STATS, "a", buffering=1 << 16)
    deadline = time.time() + LIFETIME
    open(READY, "w").close()
    await asyncio.gather(flusher(out, deadline), *(client(i, loop, pool, out, deadline) for i in range(CLIENTS)))
    out.close()
    pool.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
