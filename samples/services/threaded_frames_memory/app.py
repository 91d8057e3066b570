"""Video analytics ingest: 2 request threads turn camera frame batches into model input.

Each request takes a batch of two 1080p RGB frames (uint8, 12 MB) and builds the model's
input the way the first version of this service did: cast to float32, swap BGR to RGB,
transpose to channels-first, scale and standardise, each step a full pass (and a copy) over
50 MB of floats; the "model" then only sums a strided view. The passes are memory-bound.
FRAME_PATH=fused does the channel swap and transpose on uint8 and the cast, scale and
standardise in two passes into a reused per-thread buffer.
"""

import argparse
import threading

import numpy as np
from zoolib import setting
from zoolib.httpserve import ok, serve

FUSED = setting("FRAME_PATH", "passes") == "fused"
FRAMES = np.random.default_rng(0).integers(0, 255, (2, 1080, 1920, 3), dtype=np.uint8)
MEAN, STD = np.float32(114.0), np.float32(58.0)
_local = threading.local()


def prepare(frames: np.ndarray) -> np.ndarray:
    x = frames.astype(np.float32)
    x = x[..., ::-1].copy()
    x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    x = x / 255.0
    x = (x * 255.0 - MEAN) / STD
    return x


def prepare_fused(frames: np.ndarray) -> np.ndarray:
    if not hasattr(_local, "buffer"):
        _local.buffer = np.empty((2, 3, 1080, 1920), dtype=np.float32)
    out = _local.buffer
    np.subtract(frames[..., ::-1].transpose(0, 3, 1, 2), MEAN, out=out, dtype=np.float32)
    np.multiply(out, 1 / STD, out=out)
    return out


def handle(method: str, path: str, body: bytes) -> tuple[int, bytes]:
    if path == "/health":
        return ok({"ok": True})
    x = prepare_fused(FRAMES) if FUSED else prepare(FRAMES)
    return ok({"activity": float(x[:, :, ::64, ::64].sum())})


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    serve(a.port, handle, threads=a.threads)
