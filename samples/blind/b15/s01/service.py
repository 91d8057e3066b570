"""Scoring API: FastAPI app serving a torch MLP scorer."""
import os
import threading
import time

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

HIDDEN = int(os.environ.get("SVC_HIDDEN", "2048"))
LAYERS = int(os.environ.get("SVC_LAYERS", "4"))
IN_DIM = 256
PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

torch.set_num_threads(1)
torch.manual_seed(0)


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        dims = [IN_DIM] + [HIDDEN] * LAYERS
        blocks = []
        for i in range(LAYERS):
            blocks += [torch.nn.Linear(dims[i], dims[i + 1]), torch.nn.GELU()]
        self.body = torch.nn.Sequential(*blocks)
        self.head = torch.nn.Linear(HIDDEN, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


model = Scorer().eval()
rng = np.random.default_rng(0)
item_table = rng.standard_normal((5000, IN_DIM)).astype(np.float32)

app = FastAPI()


class Query(BaseModel):
    user: int
    items: list[int]


@app.post("/predict")
def predict(q: Query):
    feats = torch.from_numpy(item_table[np.asarray(q.items) % len(item_table)])
    with torch.inference_mode():
        scores = model(feats)
    order = torch.argsort(scores, descending=True)[:5]
    return {"user": q.user, "top": [q.items[i] for i in order.tolist()]}


@app.get("/health")
def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    with torch.inference_mode():
        model(torch.zeros(16, IN_DIM))
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
