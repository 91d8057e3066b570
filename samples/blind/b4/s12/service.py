"""Product image tagging service."""
import asyncio
import io
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from fastapi import FastAPI
from PIL import Image
from pydantic import BaseModel

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
BLOB_PORT = int(os.environ.get("SVC_BLOB_PORT", "18262"))
STAGE_WORKERS = int(os.environ.get("SVC_STAGE_WORKERS", "1"))

store = subprocess.Popen([sys.executable, os.path.join(HERE, "blobstore.py"), str(BLOB_PORT),
                          os.environ.get("SVC_BLOB_DELAY_MS", "12")])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", BLOB_PORT), timeout=0.2).close()
        break
    except OSError:
        time.sleep(0.1)


class BlobClient:
    def __init__(self):
        self.local = threading.local()

    def _conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            s = socket.create_connection(("127.0.0.1", BLOB_PORT))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c = self.local.c = (s, s.makefile("rb"))
        return c

    def get(self, key):
        s, f = self._conn()
        s.sendall(key.encode() + b"\n")
        (n,) = struct.unpack("!I", f.read(4))
        return f.read(n)


blobs = BlobClient()
loader = ThreadPoolExecutor(max_workers=STAGE_WORKERS)


def fetch_image(key):
    img = Image.open(io.BytesIO(blobs.get(key))).convert("RGB").resize((64, 64))
    return np.asarray(img, dtype=np.float32) / 255.0


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
                                       torch.nn.Conv2d(16, 32, 3, stride=2), torch.nn.ReLU(),
                                       torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))

    @torch.inference_mode()
    def tags(self, arr):
        x = torch.from_numpy(arr).permute(2, 0, 1)[None]
        return torch.topk(self.net(x), 3).indices[0].tolist()


torch.manual_seed(0)
tagger = Tagger().eval()
app = FastAPI()


class Req(BaseModel):
    image_key: str


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/tags")
async def predict(req: Req):
    loop = asyncio.get_running_loop()
    arr = await loop.run_in_executor(loader, fetch_image, req.image_key)
    tags = await loop.run_in_executor(None, tagger.tags, arr)
    return {"tags": tags}
