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


def _make_jpeg(seed):
    r = _np.random.default_rng(seed)
    h, w = 1200, 1600
    yy, xx = _np.mgrid[0:h, 0:w].astype(_np.float32)
    img = _np.stack([
        128 + 100 * _np.sin(xx / (40 + 10 * seed) + r.uniform(0, 6)),
        128 + 100 * _np.cos(yy / (55 + 7 * seed) + r.uniform(0, 6)),
        128 + 60 * _np.sin((xx + yy) / 90.0),
    ], axis=-1) + r.normal(0, 5, (h, w, 3))
    buf = _io.BytesIO()
    _Image.fromarray(_np.clip(img, 0, 255).astype(_np.uint8)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


IMAGES = [_make_jpeg(s) for s in range(3)]


class Client(FastHttpUser):
    @task
    def tag(self):
        self.client.post("/tag", data=random.choice(IMAGES), headers={"Content-Type": "image/jpeg"})
