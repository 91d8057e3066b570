"""Image tagging API: accepts a JPEG upload and returns the top classes from a small CNN."""
import io
import os
import threading
import time

import numpy as np
import torch
import torch.nn as nn
from flask import Flask, jsonify, request
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18852"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
FAST_DECODE = os.environ.get("SVC_FAST_DECODE", "0") == "1"
SIZE = 160

torch.set_num_threads(1)
torch.manual_seed(0)

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


class Tagger(nn.Module):
    def __init__(self, n_classes=100):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=1, padding=1), nn.ReLU(),
            nn.Conv2d(64, 96, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(96, 128, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(128, 128, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(128, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


model = Tagger().eval()


def load_image(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    if FAST_DECODE:
        img.draft("RGB", (SIZE, SIZE))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR, reducing_gap=2.0)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    return ((arr - MEAN) / STD).transpose(2, 0, 1)


app = Flask(__name__)


@app.post("/tag")
def tag():
    x = torch.from_numpy(load_image(request.get_data())).unsqueeze(0)
    with torch.inference_mode():
        logits = model(x)[0]
    top = torch.topk(logits, 5)
    return jsonify({"classes": top.indices.tolist(), "scores": [round(float(s), 3) for s in top.values]})


@app.get("/health")
def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    with torch.inference_mode():
        model(torch.zeros(1, 3, SIZE, SIZE))
    threading.Thread(target=_expire, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
