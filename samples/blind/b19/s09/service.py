"""Event matching worker (asyncio + executor): for each incoming event, the nearest reference timestamp."""
import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
REUSE = os.environ.get("SVC_REUSE_BUFFERS", "0") == "1"
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
N_REF = 4096

rng = np.random.default_rng(3)
REFERENCE = np.sort(rng.uniform(0, 86400, N_REF)).astype(np.float32)
_tls = threading.local()


def match(events):
    ev = np.asarray(events, dtype=np.float32)
    if REUSE:
        buf = getattr(_tls, "buf", None)
        if buf is None or buf.shape[0] < ev.shape[0]:
            buf = _tls.buf = np.empty((ev.shape[0], N_REF), np.float32)
        d = buf[: ev.shape[0]]
        np.subtract(ev[:, None], REFERENCE[None, :], out=d)
        np.abs(d, out=d)
    else:
        d = np.abs(np.subtract.outer(ev, REFERENCE))
    best = d.argmin(axis=1)
    return best, d[np.arange(len(ev)), best]


async def client(loop, pool, seed, stop, out):
    r = np.random.default_rng(seed)
    batches = [r.uniform(0, 86400, 4096).astype(np.float32) for _ in range(4)]
    i = 0
    while time.time() < stop:
        t = time.perf_counter()
        idx, gap = await loop.run_in_executor(pool, match, batches[i % 4])
        out.append(f"{time.time():.4f} {(time.perf_counter() - t) * 1000:.3f} ok\n")
        i += 1


async def flusher(stop, out):
    f = open(STATS, "a")
    while time.time() < stop + 0.5:
        await asyncio.sleep(0.3)
        lines = out[:]
        del out[: len(lines)]
        f.writelines(lines)
        f.flush()
    f.close()


async def main():
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=WORKERS)
    stop = time.time() + LIFETIME
    out = []
    tasks = [asyncio.create_task(client(loop, pool, s, stop, out)) for s in range(CLIENTS)]
    fl = asyncio.create_task(flusher(stop, out))
    if READY:
        open(READY, "w").close()
    await asyncio.gather(*tasks)
    await fl
    pool.shutdown(wait=False)


if __name__ == "__main__":
    asyncio.run(main())
