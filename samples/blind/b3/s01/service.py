"""Inference service."""
import base64
import io
import os

import numpy as np
import torch
from fastapi import FastAPI
from PIL import Image
from pydantic import BaseModel

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
LABELS = [f"class_{i}" for i in range(20)]
DECODE = os.environ.get("SVC_DECODE", "a")


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 48, 5, stride=2, padding=2), torch.nn.ReLU(),
            torch.nn.Conv2d(48, 96, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(96, 160, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(160, 160, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.head = torch.nn.Linear(160, len(LABELS))

    def forward(self, x):
        return self.head(self.body(x).flatten(1))


torch.set_num_threads(1)
torch.manual_seed(0)
model = Encoder().eval()
app = FastAPI()


def load_image(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    if DECODE == "b":
        img.draft("RGB", (256, 256))
    img = img.convert("RGB")
    w, h = img.size
    s = 256 / min(w, h)
    resample = Image.BILINEAR if DECODE == "b" else Image.LANCZOS
    img = img.resize((max(256, round(w * s)), max(256, round(h * s))), resample)
    w, h = img.size
    left, top = (w - 224) // 2, (h - 224) // 2
    img = img.crop((left, top, left + 224, top + 224))
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr = (arr - MEAN) / STD
    return arr.transpose(2, 0, 1)[None]


@app.get("/health")
def health():
    return {"ok": True}


class Item(BaseModel):
    image_b64: str


@app.post("/predict")
def predict(item: Item):
    data = base64.b64decode(item.image_b64)
    x = torch.from_numpy(np.ascontiguousarray(load_image(data)))
    with torch.no_grad():
        logits = model(x)[0]
    probs = torch.softmax(logits, 0)
    top = torch.topk(probs, 3)
    return {"labels": [LABELS[i] for i in top.indices.tolist()], "scores": top.values.tolist()}


if __name__ == "__main__":
    import argparse
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=18131)
    a = ap.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning", access_log=False)
