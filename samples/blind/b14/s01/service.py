"""Product photo tagger: loads a stored JPEG, makes a thumbnail and scores it with a small CNN."""
import io
import os

import numpy as np
import torch
from fastapi import FastAPI
from PIL import Image

torch.set_num_threads(1)
USE_DRAFT = os.environ.get("SVC_JPEG_DRAFT", "0") == "1"
THUMB = 96


def _make_photos(n=32, w=1600, h=1200):
    rng = np.random.default_rng(7)
    photos = []
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        base = np.stack([(xx * (i + 1) % 255), (yy * (i + 3) % 255), ((xx + yy) * (i + 5) % 255)], -1)
        noise = rng.integers(0, 40, size=(h, w, 3))
        arr = np.clip(base + noise, 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="JPEG", quality=90)
        photos.append(buf.getvalue())
    return photos


class Tagger(torch.nn.Module):
    def __init__(self, n_tags=20):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        )
        self.head = torch.nn.Linear(64, n_tags)

    def forward(self, x):
        return self.head(self.body(x))


PHOTOS = _make_photos()
model = Tagger().eval()
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)

app = FastAPI()


def load_thumbnail(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    if USE_DRAFT:
        img.draft("RGB", (THUMB * 2, THUMB * 2))
    img = img.convert("RGB").resize((THUMB, THUMB), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    return ((arr - MEAN) / STD).transpose(2, 0, 1)


@app.get("/predict")
def predict(item: int = 0):
    x = torch.from_numpy(load_thumbnail(PHOTOS[item % len(PHOTOS)])).unsqueeze(0)
    with torch.inference_mode():
        logits = model(x)[0]
    top = torch.topk(logits, 3)
    return {"item": item, "tags": top.indices.tolist(), "scores": [round(v, 4) for v in top.values.tolist()]}
