import os
import random
import time

from locust import FastHttpUser, HttpUser, events, task

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


def _jpeg(i):
    rng = _np.random.default_rng(i)
    base = rng.integers(0, 255, (30, 40, 3), dtype=_np.uint8)
    img = _Image.fromarray(base).resize((640, 480), _Image.BICUBIC)
    b = _io.BytesIO()
    img.save(b, format="JPEG", quality=85)
    return b.getvalue()


_photos = [_jpeg(i) for i in range(12)]


class Client(HttpUser):
    @task
    def quality(self):
        files = [("photo", (f"p{k}.jpg", random.choice(_photos), "image/jpeg")) for k in range(4)]
        self.client.post("/quality", files=files)
