"""Feature scoring API: uvicorn with 2 worker processes, torch tensors."""
import os
import signal
import threading

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18807"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REUSE = os.environ.get("SVC_REUSE_BUFFERS", "0") == "1"
ROWS, DIM = 3072, 4096

torch.set_num_threads(1)
torch.manual_seed(0)
BASE = torch.randn(ROWS, DIM)
HEAD = torch.randn(DIM, 4)
_local = threading.local()


def workspace():
    if REUSE:
        buf = getattr(_local, "buf", None)
        if buf is None:
            buf = _local.buf = torch.empty(ROWS, DIM)
        return buf
    return torch.empty(ROWS, DIM)


def compute(scale: float, shift: float):
    feats = workspace()
    torch.mul(BASE, scale, out=feats)
    feats.add_(shift)
    pooled = feats.mean(0)
    return (pooled @ HEAD).tolist()


app = FastAPI()


class Req(BaseModel):
    scale: float
    shift: float


@app.post("/score")
def score(req: Req):
    return {"scores": compute(req.scale, req.shift)}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")
