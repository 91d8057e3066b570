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



def _make_photo(w=1920, h=1440, seed=0):
    import io as _io
    import numpy as _np
    from PIL import Image as _Image
    rng = _np.random.default_rng(seed)
    yy, xx = _np.mgrid[0:h, 0:w].astype(_np.float32)
    base = _np.stack([128 + 100 * _np.sin(xx / 97.0 + k) * _np.cos(yy / 71.0 - k) for k in range(3)], axis=-1)
    base += rng.normal(0, 18, size=base.shape)
    img = _Image.fromarray(_np.clip(base, 0, 255).astype(_np.uint8))
    buf = _io.BytesIO()
    img.save(buf, format="JPEG", quality=88)
    return buf.getvalue()


PHOTOS = [_make_photo(seed=s) for s in range(3)]


class Uploader(FastHttpUser):
    @task
    def predict(self):
        self.client.post("/predict", data=random.choice(PHOTOS), headers={"Content-Type": "image/jpeg"})
