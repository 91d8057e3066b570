"""Document embedding API: FastAPI (async) with scoring offloaded to an executor, torch pooling head."""
import asyncio
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18809"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
BUFFERS = os.environ.get("SVC_BUFFERS", "per_request")
MAX_DOCS, MAX_LEN, DIM, VOCAB = 32, 512, 1024, 30000

torch.set_num_threads(1)
torch.manual_seed(0)
EMB = torch.randn(VOCAB, DIM) * 0.02
HEAD = torch.nn.Linear(DIM, 64).eval()
pool = ThreadPoolExecutor(max_workers=2)
_local = threading.local()
app = FastAPI()


class Batch(BaseModel):
    docs: list[list[int]]


def batch_tensor(n, length):
    if BUFFERS == "reuse":
        buf = getattr(_local, "buf", None)
        if buf is None:
            buf = _local.buf = torch.empty(MAX_DOCS, MAX_LEN, DIM)
        x = buf[:n, :length]
        x.zero_()
        return x
    return torch.zeros(n, MAX_LEN, DIM)[:, :length]


def embed(docs):
    length = max(len(d) for d in docs)
    x = batch_tensor(len(docs), length)
    lengths = torch.tensor([[len(d)] for d in docs], dtype=torch.float32)
    for i, d in enumerate(docs):
        ids = torch.tensor(d, dtype=torch.long)
        torch.index_select(EMB, 0, ids, out=x[i, : len(d)])
    with torch.inference_mode():
        pooled = x.sum(dim=1) / lengths
        out = HEAD(pooled)
    return out.norm(dim=1).tolist()


@app.post("/embed")
async def embed_route(b: Batch):
    loop = asyncio.get_running_loop()
    norms = await loop.run_in_executor(pool, embed, b.docs[:MAX_DOCS])
    return {"norms": norms}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
