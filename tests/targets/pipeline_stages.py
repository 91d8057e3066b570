"""A self-loaded multiprocessing pipeline that listens on nothing: the parent feeds JPEG
bytes to DECODERS decode processes (Pillow: decode, resize), which pass pixels to one
scoring process (a small NumPy model) that mostly waits on its queue.

    python pipeline_stages.py DECODERS SECONDS

prints "ready" once the first image is scored. With one decoder the decode stage is the
pipeline's slowest and does most of its CPU; with two, no single process does."""

from __future__ import annotations

import io
import multiprocessing as mp
import sys
import time

import numpy as np
from mpqueue import next_item, start_pipeline
from PIL import Image


def decode(jobs: mp.Queue, pixels: mp.Queue, parent: int) -> None:
    while (data := next_item(jobs, parent)) is not None:
        img = Image.open(io.BytesIO(data)).convert("RGB").resize((32, 32))
        pixels.put(np.asarray(img, dtype=np.float32).ravel())


def score(pixels: mp.Queue, done: mp.Queue, parent: int) -> None:
    w = np.random.default_rng(0).standard_normal((32 * 32 * 3, 16)).astype(np.float32)
    while (x := next_item(pixels, parent)) is not None:
        done.put(float((x @ w).max()))


def main(decoders: int, seconds: float) -> None:
    ramp = np.linspace(0, 255, 1600, dtype=np.uint8)
    picture = np.stack([np.tile(ramp, (1200, 1))] * 3, axis=-1)
    buf = io.BytesIO()
    Image.fromarray(picture).save(buf, format="JPEG", quality=90)
    data = buf.getvalue()
    jobs, _pixels, done = start_pipeline(decode, decoders, score, maxsize=8)
    end, ready = time.monotonic() + seconds, False
    while time.monotonic() < end:
        jobs.put(data)
        while not done.empty():
            done.get()
            if not ready:
                print("ready", flush=True)
                ready = True


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
