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


def _photo(seed):
    r = _np.random.default_rng(seed)
    x = _np.linspace(0, r.uniform(3, 9), 1024)
    y = _np.linspace(0, r.uniform(2, 6), 768)
    ph = r.uniform(0, 3, 3)
    img = (127 + 100 * _np.sin(x[None, :, None] * (1 + _np.arange(3)) + y[:, None, None] + ph)
           + r.normal(0, 6, (768, 1024, 3))).clip(0, 255).astype("uint8")
    b = _io.BytesIO()
    _Image.fromarray(img).save(b, "JPEG", quality=88)
    return b.getvalue()


PHOTOS = [_photo(s) for s in range(16)]


class Client(FastHttpUser):
    def wait_time(self):
        return 0

    @task
    def classify(self):
        self.client.post("/classify", data=random.choice(PHOTOS), headers={"Content-Type": "image/jpeg"}, name="/classify")
