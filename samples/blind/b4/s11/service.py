"""Listing photo quality service."""
import io
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from flask import Flask, jsonify, request
from PIL import Image

torch.set_num_threads(1)
FEATURES = os.environ.get("SVC_COLOR_FEATURES", "pixels")
SIDE = 96


def color_features(img):
    if FEATURES == "pixels":
        hist = [0] * 48
        bright = 0
        for r, g, b in img.getdata():
            hist[r >> 4] += 1
            hist[16 + (g >> 4)] += 1
            hist[32 + (b >> 4)] += 1
            bright += (299 * r + 587 * g + 114 * b) // 1000
        n = img.width * img.height
        return np.array(hist, dtype=np.float32) / n, bright / n / 255.0
    h = np.array(img.histogram(), dtype=np.float32).reshape(3, 16, 16).sum(axis=2).ravel()
    lum = np.asarray(img.convert("L"), dtype=np.float32).mean() / 255.0
    return h / (img.width * img.height), float(lum)


def load(blob):
    img = Image.open(io.BytesIO(blob)).convert("RGB")
    img.draft("RGB", (SIDE * 2, SIDE * 2))
    img = img.resize((SIDE, SIDE), Image.BILINEAR)
    hist, bright = color_features(img)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    return arr, hist, bright


class QualityModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 5, stride=4), torch.nn.ReLU(),
                                        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())
        self.head = torch.nn.Linear(8 + 49, 1)

    @torch.inference_mode()
    def forward(self, x, side):
        return torch.sigmoid(self.head(torch.cat([self.conv(x), side], dim=1))).ravel()


torch.manual_seed(0)
model = QualityModel().eval()
loaders = ThreadPoolExecutor(max_workers=4)
app = Flask(__name__)


@app.get("/health")
def health():
    return "ok"


@app.post("/quality")
def score():
    files = request.files.getlist("photo")
    decoded = list(loaders.map(load, [f.read() for f in files]))
    x = torch.from_numpy(np.stack([d[0] for d in decoded])).permute(0, 3, 1, 2)
    side = torch.from_numpy(np.stack([np.append(d[1], d[2]) for d in decoded]).astype(np.float32))
    q = model(x, side)
    return jsonify({"quality": [round(float(v), 4) for v in q]})
