"""Review moderation worker: scores review texts with a hashed n-gram linear model.

Requests come from in-process client threads (the upstream API layer of this deployment)
and are handled by a concurrent.futures executor.
"""
import os
import random
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
EXECUTOR = os.environ.get("SVC_EXECUTOR", "thread")
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
CLIENTS = 6
BUCKETS = 1 << 18

_rnd = random.Random(42)
WEIGHTS = [_rnd.uniform(-1, 1) for _ in range(BUCKETS)]


def _hash(s):
    h = 2166136261
    for ch in s:
        h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return h


def moderate(text):
    words = [w.strip(".,!?").lower() for w in text.split()]
    total = 0.0
    n = 0
    for i, w in enumerate(words):
        padded = f"<{w}>"
        for j in range(len(padded) - 2):
            total += WEIGHTS[_hash(padded[j:j + 3]) % BUCKETS]
            n += 1
        if i:
            total += 0.5 * WEIGHTS[_hash(words[i - 1] + " " + w) % BUCKETS]
            n += 1
    score = total / max(n, 1)
    return {"score": score, "flag": score > 0.05}


def make_texts(n=200):
    r = random.Random(9)
    letters = "abcdefghijklmnoprstuvwy"
    vocab = ["".join(r.choice(letters) for _ in range(r.randint(3, 9))) for _ in range(3000)]
    return [" ".join(r.choice(vocab) for _ in range(r.randint(280, 320))) for _ in range(n)]


def client(ex, texts, rec, stop):
    r = random.Random(threading.get_ident())
    while time.time() < stop:
        t = r.choice(texts)
        t0 = time.time()
        ex.submit(moderate, t).result()
        t1 = time.time()
        if rec:
            rec.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


def main():
    if EXECUTOR == "process":
        ex = ProcessPoolExecutor(max_workers=WORKERS)
    else:
        ex = ThreadPoolExecutor(max_workers=WORKERS)
    texts = make_texts()
    list(ex.map(moderate, texts[:16]))
    rec = open(STATS, "a", buffering=1) if STATS else None
    stop = time.time() + LIFETIME
    threads = [threading.Thread(target=client, args=(ex, texts, rec, stop), daemon=True)
               for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    time.sleep(max(0.0, stop - time.time()))
    if rec:
        rec.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
