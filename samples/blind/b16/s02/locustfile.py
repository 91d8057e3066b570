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
from locust import constant
from PIL import Image as _Image


def _photo(seed):
    rng = _np.random.default_rng(seed)
    h, w = 1500, 2000
    yy, xx = _np.mgrid[0:h, 0:w]
    base = _np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 127 // (w + h))], -1)
    img = (base + rng.integers(0, 40, (h, w, 3))).clip(0, 255).astype(_np.uint8)
    buf = _io.BytesIO()
    _Image.fromarray(img).save(buf, "JPEG", quality=90)
    return buf.getvalue()


PHOTOS = [_photo(s) for s in range(4)]


class Client(FastHttpUser):
    wait_time = constant(0)

    @task
    def classify(self):
        self.client.post("/classify", data=random.choice(PHOTOS), name="/classify",
                         headers={"Content-Type": "image/jpeg"})
