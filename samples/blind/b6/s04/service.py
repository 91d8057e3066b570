"""Semantic search API: FastAPI (async), query embedding from a separate embedding server, in-memory index."""
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18404"))
EMB_PORT = int(os.environ.get("EMB_PORT", "18454"))
here = os.path.dirname(os.path.abspath(__file__))
emb = subprocess.Popen([sys.executable, os.path.join(here, "embedder.py")], env=dict(os.environ))


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    emb.kill()
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


threading.Thread(target=_lifetime, daemon=True).start()

rng = np.random.default_rng(0)
index = rng.standard_normal((4000, 64)).astype(np.float32)
index /= np.linalg.norm(index, axis=1, keepdims=True)
docs = [f"doc-{i}" for i in range(len(index))]


class Pool:
    def __init__(self, size):
        self.size = size
        self.q = None

    async def get(self):
        if self.q is None:
            self.q = asyncio.Queue()
            for _ in range(self.size):
                for _ in range(100):
                    try:
                        self.q.put_nowait(await asyncio.open_connection("127.0.0.1", EMB_PORT))
                        break
                    except OSError:
                        await asyncio.sleep(0.1)
        return await self.q.get()

    def put(self, c):
        self.q.put_nowait(c)


pool = Pool(16)


async def embed(text):
    r, w = await pool.get()
    try:
        w.write((text.replace("\n", " ") + "\n").encode())
        await w.drain()
        return np.asarray(json.loads(await r.readline()), dtype=np.float32)
    finally:
        pool.put((r, w))


class Query(BaseModel):
    q: str
    k: int = 5


app = FastAPI()


@app.post("/search")
async def search(body: Query):
    v = await embed(body.q)
    v /= np.linalg.norm(v) + 1e-6
    s = index @ v
    top = np.argpartition(-s, body.k)[:body.k]
    top = top[np.argsort(-s[top])]
    return {"hits": [{"doc": docs[i], "score": round(float(s[i]), 4)} for i in top]}


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
