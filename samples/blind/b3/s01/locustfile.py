import base64
import io
import json
import random

import numpy as np
from locust import FastHttpUser, task
from PIL import Image


def _make(seed):
    rng = np.random.default_rng(seed)
    # smooth synthetic photo-like content
    base = rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)
    img = Image.fromarray(base).resize((1600, 1200), Image.BICUBIC)
    noise = rng.integers(0, 24, (1200, 1600, 3), dtype=np.uint8)
    img = Image.fromarray(np.clip(np.asarray(img).astype(np.int16) + noise, 0, 255).astype(np.uint8))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=88)
    return base64.b64encode(buf.getvalue()).decode()


PAYLOADS = [json.dumps({"image_b64": _make(s)}).encode() for s in range(4)]


class Client(FastHttpUser):
    @task
    def predict(self):
        self.client.post("/predict", data=random.choice(PAYLOADS), headers={"Content-Type": "application/json"})
