"""Risk scoring worker: client threads submit jobs; each job is scored in a worker process."""
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import get_context

import numpy as np

warnings.filterwarnings("ignore", category=DeprecationWarning)
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
PERSISTENT = os.environ.get("SVC_PERSISTENT_WORKERS", "0") == "1"
ctx = get_context("fork")

rng = np.random.default_rng(9)
W1 = rng.standard_normal((128, 256)).astype(np.float32) / 11
W2 = rng.standard_normal((256, 8)).astype(np.float32) / 16
history = rng.standard_normal((200000, 64)).astype(np.float32)


def score(job):
    rows = history[np.asarray(job["rows"]) % len(history)]
    x = np.concatenate([rows.mean(0), rows.std(0)])
    h = np.tanh(x @ W1)
    return int(np.argmax(h @ W2))


def _child(job, conn):
    conn.send(score(job))
    conn.close()


def score_isolated(job):
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(job, child))
    p.start()
    child.close()
    out = parent.recv()
    p.join()
    return out


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


def main():
    deadline = time.time() + LIFETIME
    workers = ctx.Pool(2) if PERSISTENT else None
    dispatch = ThreadPoolExecutor(max_workers=4)
    rec = Recorder()

    def handle(job):
        if workers is not None:
            return workers.apply(score, (job,))
        return score_isolated(job)

    def client(cid):
        r = np.random.default_rng(cid)
        while time.time() < deadline:
            job = {"account": int(r.integers(10**6)), "rows": r.integers(0, 200000, 32).tolist()}
            t0 = time.time()
            dispatch.submit(handle, job).result()
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
