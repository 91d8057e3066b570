"""Risk model: a WSGI app under gunicorn's threaded worker (1 worker, 8 threads).

The model object is shared by all request threads and guarded by one lock (its authors
were unsure it was thread-safe). The forward pass is NumPy GEMMs that release the GIL, so
without the lock two requests could run at once on 2 cores. MODEL_COPIES=per-thread gives
each request thread its own copy and no lock.
"""

import copy
import json
import threading

from zoolib import NumpyModel, setting

PER_THREAD = setting("MODEL_COPIES", "shared") == "per-thread"
shared_model = NumpyModel(width=768, layers=4, batch=64)
model_lock = threading.Lock()
_local = threading.local()


def predict(ids: list[int]) -> float:
    if PER_THREAD:
        if not hasattr(_local, "model"):
            _local.model = copy.deepcopy(shared_model)
        return _local.model(ids)
    with model_lock:
        return shared_model(ids)


def app(environ, start_response):  # type: ignore[no-untyped-def]
    if environ["PATH_INFO"] == "/health":
        out = b'{"ok": true}'
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        doc = json.loads(environ["wsgi.input"].read(n) or b"{}")
        out = json.dumps({"risk": predict(doc.get("ids", [1, 2, 3]))}).encode()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))]
    )
    return [out]
