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


_r = random.Random(5)
_L = "abcdefghijklmnopqrstuvwxyz"
_WORDS = ["".join(_r.choice(_L) for _ in range(_r.randint(2, 10))) for _ in range(3000)]
_PUNCT = [",", ".", "!", "?", ""]


def _make_review():
    n = _r.randint(250, 350)
    return " ".join(_r.choice(_WORDS).capitalize() + _r.choice(_PUNCT) if _r.random() < 0.15
                    else _r.choice(_WORDS) for _ in range(n))


_REVIEWS = [_make_review() for _ in range(200)]


def _review():
    return random.choice(_REVIEWS)


class Client(FastHttpUser):
    def wait_time(self):
        return 0

    @task
    def topics(self):
        self.client.post("/topics", json={"reviews": [_review() for _ in range(8)]})
