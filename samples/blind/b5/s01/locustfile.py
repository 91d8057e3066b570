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


SYL = ["ka", "lo", "mi", "ren", "to", "sha", "vel", "dor", "qui", "an", "es", "ta", "ri", "on", "ful",
       "ness", "ing", "pre", "un", "bel", "cor", "das", "ex", "im", "jo", "lu", "nor", "pa", "sti", "wer"]
_rng = random.Random(11)
WORDS = ["".join(_rng.choice(SYL) for _ in range(_rng.randint(1, 4))) for _ in range(3000)]


def review():
    n = random.randint(2200, 2800)
    ws = []
    for _ in range(n):
        w = random.choice(WORDS)
        if random.random() < 0.08:
            w = w.capitalize() + random.choice([",", ".", "!"])
        ws.append(w)
    return " ".join(ws)


POOL = [review() for _ in range(300)]


class Client(FastHttpUser):
    def wait_time(self):
        return 0

    @task
    def predict(self):
        self.client.post("/predict", json={"text": random.choice(POOL)}, name="/predict")
