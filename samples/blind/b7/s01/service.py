"""Photo tagging service: JPEG upload -> small CNN -> top-5 tags (Flask, threaded)."""
import io
import json
import os
import signal
import sys
import threading
import time

import numpy as np
import torch
from flask import Flask, jsonify, request
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18511"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
USE_DRAFT = os.environ.get("SVC_JPEG_DRAFT", "0") == "1"
SIDE = 112

torch.set_num_threads(1)
torch.manual_seed(0)

TAGS = [f"tag_{i:03d}" for i in range(200)]
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


class Tagger(torch.nn.Module):
    def __init__(self, n_out=len(TAGS)):
        super().__init__()
        c = [3, 16, 32, 64]
        layers = []
        for i in range(3):
            layers += [torch.nn.Conv2d(c[i], c[i + 1], 3, stride=2, padding=1), torch.nn.BatchNorm2d(c[i + 1]), torch.nn.ReLU()]
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(c[-1], n_out)

    def forward(self, x):
        x = self.body(x)
        return self.head(x.mean(dim=(2, 3)))


model = Tagger().eval()
app = Flask(__name__)
served = [0]
started = time.time()


def load_image(raw: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(raw))
    if USE_DRAFT:
        img.draft("RGB", (SIDE * 2, SIDE * 2))
    img = img.convert("RGB")
    img = img.resize((SIDE, SIDE), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr = (arr - MEAN) / STD
    return arr.transpose(2, 0, 1)


@app.post("/predict")
def predict():
    x = torch.from_numpy(load_image(request.get_data())).unsqueeze(0)
    with torch.inference_mode():
        probs = torch.softmax(model(x), dim=-1)[0]
    top = torch.topk(probs, 5)
    served[0] += 1
    return jsonify({"tags": [{"tag": TAGS[i], "p": round(float(p), 4)} for p, i in zip(top.values, top.indices)]})


@app.get("/healthz")
def healthz():
    return "ok"


def _exit(*_):
    print(json.dumps({"served": served[0], "uptime_s": round(time.time() - started, 1)}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    import logging
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, _exit)
    threading.Timer(LIFETIME, _exit).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
