"""Sensor-window anomaly scorer: FastAPI (async def) on uvicorn workers. Each window of readings is
compared with the reference set of normal windows (k-nearest-neighbour distance) with NumPy.

Env:
  SVC_PORT       listen port (default 18312)
  SVC_WORKERS    uvicorn worker processes (default 2)
  SVC_REFERENCE  "full" = all 4096 reference windows, "codebook" = 512 k-means centroids of them
  SVC_K          neighbours (default 8)
"""
import os

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18312"))
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
REFERENCE = os.environ.get("SVC_REFERENCE", "full")
K = int(os.environ.get("SVC_K", "8"))
DIM = 64
ROWS = 512

rng = np.random.default_rng(12)
REF = rng.standard_normal((4096, DIM), dtype=np.float32)
if REFERENCE == "codebook":
    # a few Lloyd iterations to summarise the reference set
    C = REF[rng.choice(len(REF), 512, replace=False)].copy()
    for _ in range(4):
        d = (REF * REF).sum(1)[:, None] - 2 * REF @ C.T + (C * C).sum(1)[None]
        a = d.argmin(1)
        for j in range(len(C)):
            m = a == j
            if m.any():
                C[j] = REF[m].mean(0)
    REF = C
REF_SQ = (REF * REF).sum(1)
BANK = rng.standard_normal((20000, DIM), dtype=np.float32)


def knn_scores(x):
    d = (x * x).sum(1)[:, None] - 2.0 * (x @ REF.T) + REF_SQ[None, :]
    np.maximum(d, 0.0, out=d)
    near = np.partition(d, K, axis=1)[:, :K]
    return np.sqrt(near).mean(1)


app = FastAPI()


class Window(BaseModel):
    sensor: str
    start: int
    gain: float = 1.0


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/score")
async def score(w: Window):
    s = w.start % (len(BANK) - ROWS)
    x = BANK[s:s + ROWS] * w.gain
    sc = knn_scores(x)
    thr = float(np.quantile(sc, 0.99))
    rows = [{"t": i, "score": round(float(v), 3), "flag": bool(v >= thr)} for i, v in enumerate(sc)]
    return {"sensor": w.sensor, "max": round(float(sc.max()), 3), "threshold": round(thr, 3), "rows": rows}


if __name__ == "__main__":
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=WORKERS, log_level="warning", access_log=False)
