"""Embedding projection: a threaded standard-library HTTP server calling NumPy GEMMs.

One thread per connection (ThreadingHTTPServer). Each request projects a batch of 32
vectors through three 384-wide layers in NumPy. NumPy's OpenBLAS runs each GEMM on its own
thread pool, sized by OPENBLAS_NUM_THREADS (8 here, from an image built for a bigger node):
the pool's threads compete with the request threads for the 2 cores.
"""

import argparse

from zoolib import NumpyModel
from zoolib.httpserve import ok, serve

model = NumpyModel(width=384, layers=3, batch=32)


def handle(method: str, path: str, body: bytes) -> tuple[int, bytes]:
    if path == "/health":
        return ok({"ok": True})
    return ok({"norm": model(list(range(64)))})


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    serve(p.parse_args().port, handle)
