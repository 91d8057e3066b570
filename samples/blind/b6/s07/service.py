"""Similar-item retrieval API: uvicorn with 2 worker processes, async handler, NumPy scan in the default executor."""
import asyncio
import os
import signal
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402
from fastapi import FastAPI  # noqa: E402
from pydantic import BaseModel  # noqa: E402

PORT = int(os.environ.get("SVC_PORT", "18407"))
SEARCH = os.environ.get("SVC_SEARCH", "flat")
N, D, NLIST, NPROBE = 600_000, 128, 16, 2


class Index:
    def __init__(self):
        rng = np.random.default_rng(7)
        self.cent = rng.standard_normal((NLIST, D)).astype(np.float32)
        vecs = rng.standard_normal((N, D), dtype=np.float32)
        vecs += self.cent[rng.integers(0, NLIST, N)] * 2.0
        assign = np.argmax(vecs @ self.cent.T, axis=1)
        order = np.argsort(assign, kind="stable")
        self.vecs = np.ascontiguousarray(vecs[order])
        del vecs
        self.ids = order
        self.bounds = np.searchsorted(assign[order], np.arange(NLIST + 1))

    def search(self, q, k):
        if SEARCH == "flat":
            s = self.vecs @ q
            top = np.argpartition(-s, k)[:k]
            top = top[np.argsort(-s[top])]
            return self.ids[top].tolist(), s[top].tolist()
        lists = np.argsort(-(self.cent @ q))[:NPROBE]
        cand_s, cand_i = [], []
        for li in lists:
            a, b = self.bounds[li], self.bounds[li + 1]
            s = self.vecs[a:b] @ q
            t = np.argpartition(-s, k)[:k]
            cand_s.append(s[t]); cand_i.append(t + a)
        s = np.concatenate(cand_s); i = np.concatenate(cand_i)
        top = np.argsort(-s)[:k]
        return self.ids[i[top]].tolist(), s[top].tolist()


index = None
app = FastAPI()


@app.on_event("startup")
async def _load():
    global index
    index = Index()


class Q(BaseModel):
    vector: list[float]
    k: int = 10


@app.post("/similar")
async def similar(q: Q):
    v = np.asarray(q.vector, dtype=np.float32)
    loop = asyncio.get_running_loop()
    ids, scores = await loop.run_in_executor(None, index.search, v, q.k)
    return {"ids": ids, "scores": [round(s, 4) for s in scores]}


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


if __name__ == "__main__":
    import uvicorn
    threading.Thread(target=_lifetime, daemon=True).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")
