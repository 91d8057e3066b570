"""Nearest-neighbour search service: exact L2 search of query embeddings over an item index."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18810"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SELECT = os.environ.get("SVC_SELECT", "sort")

rng = np.random.default_rng(0)
items = rng.standard_normal((20000, 128))
item_sq = (items ** 2).sum(axis=1)
users = rng.standard_normal((5000, 128))
executor = ThreadPoolExecutor(max_workers=4)

app = FastAPI()


class Search(BaseModel):
    users: list[int]
    k: int = 10


def search(uids, k):
    q = users[np.asarray(uids) % len(users)]
    d = item_sq[None, :] - 2.0 * (q @ items.T) + (q ** 2).sum(axis=1)[:, None]
    if SELECT == "partition":
        idx = np.argpartition(d, k, axis=1)[:, :k]
        part = np.take_along_axis(d, idx, axis=1)
        top = np.take_along_axis(idx, np.argsort(part, axis=1), axis=1)
    else:
        top = np.argsort(d, axis=1)[:, :k]
    return top.tolist()


@app.post("/search")
async def handle(s: Search):
    loop = asyncio.get_running_loop()
    top = await loop.run_in_executor(executor, search, s.users, s.k)
    return {"neighbours": top}


async def main():
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning"))
    task = asyncio.create_task(server.serve())
    await asyncio.sleep(LIFETIME)
    server.should_exit = True
    await task
    executor.shutdown(wait=False)


if __name__ == "__main__":
    asyncio.run(main())
