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

_rng = random.Random(1)
_syll = [a + b for a in "bcdfgklmnprstv" for b in "aeiou"]


def _word():
    return "".join(_rng.choice(_syll) for _ in range(_rng.randint(1, 4)))


_DOCS = []
for _ in range(200):
    words = [_word() for _ in range(_rng.randint(400, 600))]
    _DOCS.append(" ".join(w.capitalize() if _rng.random() < 0.1 else w for w in words) + ".")


class Client(FastHttpUser):
    @task
    def classify(self):
        self.client.post("/classify", json={"text": _rng.choice(_DOCS)})
