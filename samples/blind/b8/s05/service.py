import os, threading, time

_bt = os.environ.get("SVC_BLAS_THREADS")
if _bt:
    os.environ["OPENBLAS_NUM_THREADS"] = _bt
import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel

DIM = 384


class Scorer:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.emb = rng.standard_normal((20000, DIM)).astype(np.float32) * 0.1
        self.layers = [(rng.standard_normal((DIM, DIM)).astype(np.float32) / np.sqrt(DIM),
                        np.zeros(DIM, np.float32)) for _ in range(6)]
        self.head = rng.standard_normal((DIM, 16)).astype(np.float32)

    def __call__(self, ids):
        h = self.emb[ids]
        for w, b in self.layers:
            h = np.maximum(h @ w + b, 0.0)
        return h @ self.head


model = Scorer()
app = FastAPI()


class Req(BaseModel):
    ids: list[int]


@app.post("/predict")
def predict(req: Req):
    ids = np.asarray(req.ids, dtype=np.int64) % model.emb.shape[0]
    y = model(ids)
    return {"top": y.argmax(1).tolist()}


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    os._exit(0)


threading.Thread(target=_expire, daemon=True).start()
