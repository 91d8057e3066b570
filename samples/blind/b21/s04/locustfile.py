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


_rng = random.Random(7)
BODIES = [{"customer": _rng.randint(0, 4999),
           "text": " ".join(f"w{_rng.randint(0, 3999)}" for _ in range(_rng.randint(20, 30)))} for _ in range(50)]


class Client(FastHttpUser):
    @task
    def predict(self):
        self.client.post("/embed", json=random.choice(BODIES))
