"""Async batch scorer: an asyncio app that offloads numeric work to worker processes."""
import asyncio
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
POOL_MODE = os.environ.get("SVC_POOL", "per_request")
CLIENTS = int(os.environ.get("SVC_CLIENTS", "6"))

rng = np.random.default_rng(2)
W = rng.standard_normal((256, 64)).astype(np.float32)


def score(seed: int):
    x = np.random.default_rng(seed).standard_normal((256, 256), dtype=np.float32)
    h = np.tanh(x @ W)
    return float(h.sum())


class App:
    def __init__(self):
        self.shared = ProcessPoolExecutor(max_workers=2) if POOL_MODE == "shared" else None

    async def handle(self, seed):
        loop = asyncio.get_running_loop()
        if self.shared is not None:
            return await loop.run_in_executor(self.shared, score, seed)
        with ProcessPoolExecutor(max_workers=1) as pool:
            return await loop.run_in_executor(pool, score, seed)


async def main():
    app = App()
    if app.shared is not None:
        await asyncio.gather(*[asyncio.get_running_loop().run_in_executor(app.shared, score, i) for i in range(4)])
    rec = open(os.environ.get("SVC_STATS_PATH", "/dev/null"), "a", buffering=1)
    stop = time.time() + LIFETIME

    async def client(cid):
        n = 0
        while time.time() < stop:
            t = time.time()
            await app.handle(cid * 1_000_000 + n)
            n += 1
            now = time.time()
            rec.write(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")

    tasks = [asyncio.create_task(client(i)) for i in range(CLIENTS)]
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    await asyncio.gather(*tasks)
    rec.close()
    if app.shared is not None:
        app.shared.shutdown(wait=True)


if __name__ == "__main__":
    asyncio.run(main())
