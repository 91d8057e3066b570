"""Nearest-neighbour retrieval worker: asyncio front end, NumPy search run in an executor."""
import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
PARTIAL = os.environ.get("SVC_PARTIAL_SELECT", "0") == "1"
N_ITEMS, DIM, K = 100000, 16, 50

rng = np.random.default_rng(10)
items = rng.standard_normal((N_ITEMS, DIM)).astype(np.float32)
items /= np.linalg.norm(items, axis=1, keepdims=True)


def search(queries):
    scores = queries @ items.T
    if PARTIAL:
        idx = np.argpartition(-scores, K, axis=1)[:, :K]
        part = np.take_along_axis(scores, idx, 1)
        order = np.argsort(-part, axis=1)
        return np.take_along_axis(idx, order, 1)
    return np.argsort(-scores, axis=1)[:, :K]


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
            items_, self.buf = self.buf, []
            with open(self.path, "a") as f:
                f.writelines(items_)


async def main():
    deadline = time.time() + LIFETIME
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=2)
    rec = Recorder()
    search(rng.standard_normal((8, DIM)).astype(np.float32))

    async def client(cid):
        r = np.random.default_rng(cid)
        while time.time() < deadline:
            q = r.standard_normal((8, DIM)).astype(np.float32)
            t0 = time.time()
            await loop.run_in_executor(pool, search, q)
            rec.add(t0)

    tasks = [asyncio.create_task(client(c)) for c in range(CLIENTS)]
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    await asyncio.sleep(max(0.0, deadline - time.time()))
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
