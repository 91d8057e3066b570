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


def _make_photo(seed):
    r = _np.random.default_rng(seed)
    h, w = 1536, 2048
    yy, xx = _np.mgrid[0:h, 0:w]
    base = _np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 255 // (w + h))], -1)
    img = (base + r.integers(0, 8, (h, w, 3))).clip(0, 255).astype(_np.uint8)
    buf = _io.BytesIO()
    _Image.fromarray(img).save(buf, "JPEG", quality=85)
    return buf.getvalue()


PHOTOS = [_make_photo(s) for s in range(3)]


class Client(FastHttpUser):
    def wait_time(self):
        return 0

    @task
    def tag(self):
        self.client.post("/tag", data=random.choice(PHOTOS), headers={"Content-Type": "image/jpeg"})
