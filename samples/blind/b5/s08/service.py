"""Feed re-ranker: FastAPI (sync def). Candidates arrive in groups (one per source); each group is
scored against the user vector and the results are merged.

Env:
  SVC_PORT        listen port (default 18308)
  SVC_PARALLEL    1 = score groups concurrently (a thread per group), 0 = score groups in the request thread
"""
import os
import threading

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18308"))
PARALLEL = os.environ.get("SVC_PARALLEL", "1") == "1"
DIM = 32

rng = np.random.default_rng(8)
EMB = rng.standard_normal((100000, DIM), dtype=np.float32)
BIAS = rng.standard_normal(100000).astype(np.float32) * 0.1


def score_group(user, ids, out, k):
    e = EMB[ids]
    s = e @ user + BIAS[ids]
    best = int(np.argmax(s))
    out[k] = (int(ids[best]), float(s[best]))


def rerank(user, groups):
    out = [None] * len(groups)
    if PARALLEL:
        threads = [threading.Thread(target=score_group, args=(user, g, out, k)) for k, g in enumerate(groups)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for k, g in enumerate(groups):
            score_group(user, g, out, k)
    out.sort(key=lambda r: -r[1])
    return out


app = FastAPI()


class Req(BaseModel):
    user: list[float]
    groups: list[list[int]]


@app.get("/health")
def health():
    return {"ok": True}


@app.post("/rerank")
def handle(r: Req):
    user = np.asarray(r.user, dtype=np.float32)
    groups = [np.asarray(g, dtype=np.int64) for g in r.groups]
    res = rerank(user, groups)
    return {"items": [i for i, _ in res[:10]], "scores": [round(s, 4) for _, s in res[:10]]}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
