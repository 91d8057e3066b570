"""Defect detection: Pillow prepares each photo, a small convolutional network scores it.

Two bottlenecks at once. Each upload is decoded and resized with Pillow (load_item), then a
small torch CNN (MODEL_CHANNELS wide, one intra-op thread) runs on the 160x160 input. The
network is the larger cost: MODEL_CHANNELS=24 (a narrower model) gains more than
IMAGE_DRAFT=1 (cheaper decoding), the secondary bottleneck. Six users keep six requests
running at once on the threadpool: REQUEST_THREADS=2 (one per core) tells whether the
threads outnumbering the cores cost throughput (oversubscription) or only queue for them.
"""

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
import numpy as np
import torch
from fastapi import FastAPI, Request
from PIL import Image
from starlette.concurrency import run_in_threadpool
from zoolib import setting, setting_int

torch.set_num_threads(1)
torch.manual_seed(0)
DRAFT = setting("IMAGE_DRAFT", "0") == "1"
C = setting_int("MODEL_CHANNELS", 48)
# requests run at once in the threadpool; anyio's default is 40
REQUEST_THREADS = setting_int("REQUEST_THREADS", 40)
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, C, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.Conv2d(C, C, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(C, C, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(),
    torch.nn.Linear(C, 2),
).eval()


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS
    yield


app = FastAPI(lifespan=lifespan)


def load_item(data: bytes) -> torch.Tensor:
    img = Image.open(io.BytesIO(data))
    if DRAFT:
        img.draft("RGB", (160, 160))
    img = img.convert("RGB").resize((160, 160), Image.BILINEAR if DRAFT else Image.LANCZOS)
    x = np.asarray(img, dtype=np.float32) / 255.0
    return torch.from_numpy(x).permute(2, 0, 1).unsqueeze(0)


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/inspect")
async def inspect(request: Request) -> dict:
    return await run_in_threadpool(handle, await request.body())


def handle(data: bytes) -> dict:
    x = load_item(data)
    with torch.inference_mode():
        return {"defect": int(net(x).argmax())}
