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


import io as _io

import numpy as _np
from PIL import Image as _Image


def _make_images(n=6):
    rng = _np.random.default_rng(1)
    out = []
    for i in range(n):
        base = rng.integers(0, 255, (48, 64, 3), dtype=_np.uint8)
        img = _Image.fromarray(base).resize((2048, 1536), _Image.BILINEAR)
        buf = _io.BytesIO()
        img.save(buf, format="JPEG", quality=90)
        out.append(buf.getvalue())
    return out


IMAGES = _make_images()


class Client(FastHttpUser):
    @task
    def predict(self):
        self.client.post("/predict", data=random.choice(IMAGES),
                         headers={"Content-Type": "image/jpeg"})
