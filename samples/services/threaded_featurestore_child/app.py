"""Fraud scoring: a threaded HTTP server (8 request threads) and a local feature store child.

At start-up the service launches its feature store (zoolib.featurestore) as a helper child
process with multiprocessing, as services do with a local cache or feature server. Each
request thread fetches the account's features over a socket (FEATURE_MS per call, three
calls a request) and scores them with a small NumPy model: the request threads spend their
time blocked on that socket.
"""

import argparse
import json
import multiprocessing
import threading

from zoolib import NumpyModel, setting_int
from zoolib.featurestore import Client, serve, wait_ready
from zoolib.httpserve import ok
from zoolib.httpserve import serve as serve_http

model = NumpyModel(width=64, layers=1)
_local = threading.local()
STORE_PORT = 0


def client() -> Client:
    if not hasattr(_local, "c"):
        _local.c = Client(STORE_PORT)
    return _local.c


def handle(method: str, path: str, body: bytes) -> tuple[int, bytes]:
    if path == "/health":
        return ok({"ok": True})
    account = json.loads(body or b"{}").get("account", "0")
    ids: list[int] = []
    for part in ("profile", "history", "device"):
        ids += [int(x * 1000) for x in client().get(f"{part}:{account}")]
    return ok({"risk": model(ids)})


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--store-port", type=int, required=True)
    p.add_argument("--threads", type=int, default=8)
    a = p.parse_args()
    STORE_PORT = a.store_port
    store = multiprocessing.Process(
        target=serve, args=(a.store_port, setting_int("FEATURE_MS", 50)), daemon=True
    )
    store.start()
    wait_ready(a.store_port)
    serve_http(a.port, handle, threads=a.threads)
