"""Sharded embedding lookup API: scores a query against 32 index shards and merges the top hits."""
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI

PORT = int(os.environ.get("SVC_PORT", "18810"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SHARED_POOL = os.environ.get("SVC_SHARED_POOL", "0") == "1"
NSHARDS = 32
DIM = 32

rng = np.random.default_rng(0)
SHARDS = [rng.normal(size=(64, DIM)).astype(np.float32) for _ in range(NSHARDS)]
QUERIES = rng.normal(size=(1024, DIM)).astype(np.float32)
_pool = ThreadPoolExecutor(max_workers=NSHARDS) if SHARED_POOL else None

app = FastAPI()


def search_shard(i, q):
    s = SHARDS[i] @ q
    j = int(s.argmax())
    return float(s[j]), i * 64 + j


@app.get("/search/{qid}")
def search(qid: int):
    q = QUERIES[qid % len(QUERIES)]
    if _pool is not None:
        hits = list(_pool.map(search_shard, range(NSHARDS), [q] * NSHARDS))
    else:
        with ThreadPoolExecutor(max_workers=NSHARDS) as ex:
            hits = list(ex.map(search_shard, range(NSHARDS), [q] * NSHARDS))
    hits.sort(reverse=True)
    return {"hits": [h[1] for h in hits[:5]]}


def _stop_later():
    time.sleep(LIFETIME)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop_later, daemon=True).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")
