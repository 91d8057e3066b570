"""Fuzzy product-name matcher: edit-distance search over a catalogue, driven by in-process client threads."""
import os
import random
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
EXECUTOR = os.environ.get("SVC_EXECUTOR", "thread")
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))

_rng = random.Random(11)
ALPHA = "abcdefghijklmnopqrstuvwxyz "
CATALOGUE = ["".join(_rng.choice(ALPHA) for _ in range(_rng.randint(10, 18))) for _ in range(120)]


def distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def match(query, k=3):
    scored = sorted((distance(query, name), name) for name in CATALOGUE)
    return [n for _, n in scored[:k]]


def main():
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1 << 16)
    lock = threading.Lock()
    if EXECUTOR == "process":
        pool = ProcessPoolExecutor(max_workers=WORKERS)
    else:
        pool = ThreadPoolExecutor(max_workers=WORKERS)
    pool.submit(match, "warm up").result()
    deadline = time.time() + LIFETIME

    def client(seed):
        rng = random.Random(seed)
        last = time.time()
        while time.time() < deadline:
            q = "".join(rng.choice(ALPHA) for _ in range(rng.randint(10, 16)))
            t0 = time.time()
            pool.submit(match, q).result()
            now = time.time()
            with lock:
                stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
                if now - last > 0.3:
                    stats.flush()
                    last = now

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for th in threads:
        th.start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    for th in threads:
        th.join()
    with lock:
        stats.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
