"""Image classification API (FastAPI, sync handlers) with a small torch CNN."""
import base64
import io
import os
import signal
import threading

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI
from PIL import Image
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
DECODE = os.environ.get("SVC_DECODE", "full")
SIZE = 224

torch.set_num_threads(1)
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


class Classifier(torch.nn.Module):
    def __init__(self, n_classes=100):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 5, stride=4, padding=2), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.head = torch.nn.Linear(64, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


torch.manual_seed(0)
model = Classifier().eval()


def load_image(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    if DECODE == "draft":
        img.draft("RGB", (SIZE * 2, SIZE * 2))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    arr = np.asarray(img, dtype=np.float32) / 255.0
    arr = (arr - MEAN) / STD
    return arr.transpose(2, 0, 1)[None]


app = FastAPI()


class Req(BaseModel):
    image: str


@app.post("/predict")
def predict(req: Req):
    x = torch.from_numpy(np.ascontiguousarray(load_image(base64.b64decode(req.image))))
    with torch.inference_mode():
        probs = model(x).softmax(-1)[0]
    top = torch.topk(probs, 3)
    return {"labels": top.indices.tolist(), "scores": [round(v, 4) for v in top.values.tolist()]}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
