"""Image tagging pipeline: decode/resize worker processes feed a model process; jobs come from an in-process feeder."""
import io
import multiprocessing as mp
import os
import threading
import time

import numpy as np
from PIL import Image

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
DECODERS = int(os.environ.get("SVC_DECODERS", "2"))
DECODE = os.environ.get("SVC_DECODE", "full")
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
IN_FLIGHT = 16
SIZE = 224


def make_images(n=16):
    rng = np.random.default_rng(10)
    blobs = []
    for i in range(n):
        base = rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((1280, 960), Image.BILINEAR)
        noise = rng.integers(0, 24, (960, 1280, 3), dtype=np.uint8)
        img = Image.fromarray(np.asarray(img) // 2 + noise)
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=90)
        blobs.append(buf.getvalue())
    return blobs


BLOBS = make_images()


def decode_worker(in_q, mid_q):
    while True:
        job_id, idx, t0 = in_q.get()
        img = Image.open(io.BytesIO(BLOBS[idx]))
        if DECODE == "draft":
            img.draft("RGB", (SIZE, SIZE))
        img = img.convert("RGB")
        img = img.resize((SIZE, SIZE), Image.LANCZOS)
        mid_q.put((job_id, img.tobytes(), t0))


def model_worker(mid_q, out_q):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((56 * 56 * 3, 20)).astype(np.float32)
    while True:
        job_id, raw, t0 = mid_q.get()
        x = np.frombuffer(raw, dtype=np.uint8).reshape(SIZE, SIZE, 3).astype(np.float32) / 255.0
        x = x.reshape(56, 4, 56, 4, 3).mean(axis=(1, 3)).reshape(-1)
        tag = int(np.argmax(x @ w))
        out_q.put((job_id, tag, t0))



def shutdown():
    for child in mp.active_children():
        child.kill()
    os._exit(0)

def main():
    threading.Timer(LIFETIME, shutdown).start()
    ctx = mp.get_context("fork")
    in_q, mid_q, out_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=decode_worker, args=(in_q, mid_q), daemon=True) for _ in range(DECODERS)]
    procs.append(ctx.Process(target=model_worker, args=(mid_q, out_q), daemon=True))
    for p in procs:
        p.start()
    slots = threading.Semaphore(IN_FLIGHT)

    def feeder():
        i = 0
        while True:
            slots.acquire()
            in_q.put((i, i % len(BLOBS), time.time()))
            i += 1

    threading.Thread(target=feeder, daemon=True).start()
    with open(STATS, "a") as f:
        ready_sent = False
        last = time.time()
        while True:
            job_id, tag, t0 = out_q.get()
            slots.release()
            now = time.time()
            f.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
            if not ready_sent and READY:
                open(READY, "w").close()
                ready_sent = True
            if now - last > 0.25:
                f.flush()
                last = now


if __name__ == "__main__":
    main()
