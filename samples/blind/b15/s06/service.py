"""Recommendation worker: in-process clients submit jobs to a thread pool that scores them against a shared item index."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
POOL_SIZE = int(os.environ.get("SVC_POOL_SIZE", "4"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
NARROW = os.environ.get("SVC_NARROW_LOCK", "0") == "1"
N_ITEMS, DIM = 20000, 128


class Recorder:
    def __init__(self):
        self.path = os.environ.get("SVC_STATS_PATH")
        self.buf = []
        threading.Thread(target=self._flush, daemon=True).start()

    def add(self, t0):
        now = time.time()
        self.buf.append(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")

    def _flush(self):
        while self.path:
            time.sleep(0.3)
            items, self.buf = self.buf, []
            with open(self.path, "a") as f:
                f.writelines(items)


class ItemIndex:
    """Item embeddings plus a per-user profile cache, shared by all pool threads."""

    def __init__(self):
        rng = np.random.default_rng(6)
        self.items = rng.standard_normal((N_ITEMS, DIM)).astype(np.float32)
        self.profiles = {}
        self.hits = 0
        self.lock = threading.Lock()

    def profile(self, user):
        p = self.profiles.get(user)
        if p is None:
            r = np.random.default_rng(user)
            p = self.profiles[user] = r.standard_normal((32, DIM)).astype(np.float32)
        else:
            self.hits += 1
        return p

    def recommend(self, user, k=20):
        if NARROW:
            with self.lock:
                p = self.profile(user)
            scores = (self.items @ p.T).max(axis=1)
        else:
            with self.lock:
                p = self.profile(user)
                scores = (self.items @ p.T).max(axis=1)
        top = np.argpartition(-scores, k)[:k]
        return top[np.argsort(-scores[top])]


def main():
    deadline = time.time() + LIFETIME
    index = ItemIndex()
    pool = ThreadPoolExecutor(max_workers=POOL_SIZE)
    rec = Recorder()
    index.recommend(1)

    def client(cid):
        rng = np.random.default_rng(100 + cid)
        while time.time() < deadline:
            t0 = time.time()
            pool.submit(index.recommend, int(rng.integers(5000))).result()
            rec.add(t0)

    for c in range(CLIENTS):
        threading.Thread(target=client, args=(c,), daemon=True).start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    while time.time() < deadline:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()
