import os
import random
import time

from locust import FastHttpUser, events, task

_rec_path = os.environ.get("B4_RECORDS")
_rec = open(_rec_path, "a", buffering=1 << 16) if _rec_path else None
_last_flush = [time.time()]


@events.request.add_listener
def _record(request_type, name, response_time, response_length, exception=None, **kw):
    if _rec is None:
        return
    now = time.time()
    _rec.write(f"{now:.4f} {response_time:.3f} {'ok' if exception is None else 'err'}\n")
    if now - _last_flush[0] > 0.3:
        _rec.flush()
        _last_flush[0] = now


@events.quitting.add_listener
def _close(environment, **kw):
    if _rec is not None:
        _rec.flush()

import base64
import io

import numpy as np
from PIL import Image


def _make_images(n=4, w=2400, h=1800):
    out = []
    rng = np.random.default_rng(11)
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(n):
        base = np.stack([(xx * (i + 1) // 17) % 256, (yy * (i + 2) // 13) % 256, ((xx + yy) // 9) % 256], -1)
        noise = rng.integers(0, 6, size=(h, w, 3))
        img = Image.fromarray(((base + noise) % 256).astype(np.uint8))
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=90)
        out.append(base64.b64encode(buf.getvalue()).decode())
    return out


_IMAGES = _make_images()


class Client(FastHttpUser):
    @task
    def predict(self):
        self.client.post("/predict", json={"image": random.choice(_IMAGES)})
