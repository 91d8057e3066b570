import os
import zlib

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

torch.set_num_threads(1)
DIM = 4096
NGRAMS = (2, 3, 4, 5)
MODE = os.environ.get("SVC_FEATURES", "loop")


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(DIM, 256), torch.nn.ReLU(), torch.nn.Linear(256, 12))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


def featurize_loop(text):
    counts = [0.0] * DIM
    t = text.lower()
    for n in NGRAMS:
        for i in range(len(t) - n + 1):
            h = zlib.crc32(t[i:i + n].encode()) % DIM
            counts[h] += 1.0
    v = np.asarray(counts, dtype=np.float32)
    return v / (np.linalg.norm(v) + 1e-6)


_P = np.uint64(1099511628211)


def featurize_vec(text):
    b = np.frombuffer(text.lower().encode(), dtype=np.uint8).astype(np.uint64)
    out = np.zeros(DIM, dtype=np.float32)
    for n in NGRAMS:
        if len(b) < n:
            continue
        h = np.full(len(b) - n + 1, 14695981039346656037, dtype=np.uint64)
        for k in range(n):
            h = (h ^ b[k:len(b) - n + 1 + k]) * _P
        out += np.bincount((h % DIM).astype(np.int64), minlength=DIM).astype(np.float32)
    return out / (np.linalg.norm(out) + 1e-6)


featurize = featurize_loop if MODE == "loop" else featurize_vec
model = Scorer().eval()
app = FastAPI()


class Doc(BaseModel):
    id: str
    text: str


@app.post("/predict")
def predict(doc: Doc):
    x = torch.from_numpy(featurize(doc.text)).unsqueeze(0)
    with torch.inference_mode():
        p = model(x)[0]
    top = int(torch.argmax(p))
    return {"id": doc.id, "label": top, "score": float(p[top])}


@app.get("/health")
def health():
    return {"ok": True}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("SVC_PORT", "18711")), log_level="warning",
                access_log=False)
