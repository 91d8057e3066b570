"""Session profile builder: consumes user activity batches from stdin and emits top interest buckets."""
import asyncio
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
REUSE = os.environ.get("SVC_REUSE_GRID", "0") == "1"
BUCKETS, CHANNELS = 65536, 128
WORKERS = 2

torch.set_num_threads(1)
DECAY = torch.linspace(1.0, 0.5, CHANNELS)


class ProfileBuilder:
    def __init__(self):
        self.grid = torch.zeros(BUCKETS, CHANNELS) if REUSE else None

    def build(self, events):
        if REUSE:
            grid = self.grid
            grid.zero_()
        else:
            grid = torch.zeros(BUCKETS, CHANNELS)
        ev = torch.tensor(events, dtype=torch.float32)
        rows = ev[:, 0].long()
        cols = ev[:, 1].long()
        grid.index_put_((rows, cols), ev[:, 2], accumulate=True)
        strength = torch.mv(grid, DECAY)
        top = torch.topk(strength, 8)
        return top.indices.tolist()


async def main():
    loop = asyncio.get_running_loop()
    ex = ThreadPoolExecutor(max_workers=WORKERS)
    builders = {}

    def work(events):
        import threading
        b = builders.get(threading.get_ident())
        if b is None:
            b = builders[threading.get_ident()] = ProfileBuilder()
        return b.build(events)

    await loop.run_in_executor(ex, work, [[1, 1, 1.0]])
    reader = asyncio.StreamReader(limit=1 << 22)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    rec = open(STATS, "a", buffering=1) if STATS else None
    if READY:
        open(READY, "w").close()
    sem = asyncio.Semaphore(WORKERS * 2)
    deadline = time.time() + LIFETIME

    async def handle(msg, t0):
        try:
            await loop.run_in_executor(ex, work, msg["events"])
            t1 = time.time()
            if rec:
                rec.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
        finally:
            sem.release()

    while time.time() < deadline:
        await sem.acquire()
        line = await reader.readline()
        if not line:
            break
        t0 = time.time()
        loop.create_task(handle(json.loads(line), t0))
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
