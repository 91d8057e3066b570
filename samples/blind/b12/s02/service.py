"""Image classification service (Flask): looks up a stored JPEG, prepares it and runs a small CNN."""
import io
import os
import signal
import threading
import time

import numpy as np
import torch
from flask import Flask, jsonify, request
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18802"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
DRAFT = os.environ.get("SVC_DRAFT", "0") == "1"
SIZE = 224

torch.set_num_threads(1)
torch.manual_seed(0)


def make_store(n=6):
    rng = np.random.default_rng(3)
    store = []
    yy, xx = np.mgrid[0:1536, 0:2048]
    for i in range(n):
        base = np.stack([(xx * (i + 1)) % 256, (yy * 2) % 256, (xx + yy) % 256], -1).astype(np.float32)
        noise = rng.normal(0, 40, base.shape)
        arr = np.clip(base + noise, 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="JPEG", quality=90)
        store.append(buf.getvalue())
    return store


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


STORE = make_store()
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
model = Classifier().eval()


def load_image(blob):
    img = Image.open(io.BytesIO(blob))
    if DRAFT:
        img.draft("RGB", (SIZE * 2, SIZE * 2))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    x = (np.asarray(img, np.float32) / 255.0 - MEAN) / STD
    return torch.from_numpy(x.transpose(2, 0, 1).copy()).unsqueeze(0)


app = Flask(__name__)


@app.post("/classify")
def classify():
    body = request.get_json()
    x = load_image(STORE[int(body["image_id"]) % len(STORE)])
    with torch.inference_mode():
        logits = model(x)
    return jsonify({"label": int(logits.argmax()), "score": float(logits.max())})


def _stop_later():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    threading.Thread(target=_stop_later, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
