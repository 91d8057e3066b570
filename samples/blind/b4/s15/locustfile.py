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

import json as _json
import socket as _socket

from locust import User


class Client(User):
    """Raw JSON-lines client over one TCP connection per user."""

    def on_start(self):
        host = self.host.split("//")[-1]
        h, p = host.split(":")
        self.sock = _socket.create_connection((h, int(p)))
        self.sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        self.rf = self.sock.makefile("rb")

    @task
    def offer(self):
        t0 = time.perf_counter()
        exc = None
        try:
            self.sock.sendall((_json.dumps({"user": f"u{random.randint(0, 99999)}"}) + "\n").encode())
            line = self.rf.readline()
            if not line:
                raise ConnectionError("closed")
        except Exception as e:  # noqa: BLE001
            exc = e
        self.environment.events.request.fire(request_type="tcp", name="offer", response_time=(time.perf_counter() - t0) * 1000,
                                             response_length=0, exception=exc, context={})
