import io
import multiprocessing as mp
import os
import threading
import time

import numpy as np
from PIL import Image

STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
LIFETIME = float(os.environ.get("SVC_LIFETIME", "600"))
DRAFT = os.environ.get("SVC_JPEG_DRAFT", "0") == "1"
IN_FLIGHT = 8
SIZE = 224


def make_photos(n=8):
    rng = np.random.default_rng(5)
    out = []
    yy, xx = np.mgrid[0:1800, 0:2400]
    for i in range(n):
        base = np.stack([(xx * (i + 1) // 13) % 256, (yy * (i + 2) // 11) % 256, ((xx + yy) // (i + 3)) % 256], -1)
        img = np.clip(base + rng.normal(0, 18, base.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def decode_stage(inq, outq):
    while True:
        item = inq.get()
        if item is None:
            outq.put(None)
            return
        rid, data = item
        im = Image.open(io.BytesIO(data))
        if DRAFT:
            im.draft("RGB", (SIZE, SIZE))
        im = im.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
        outq.put((rid, np.asarray(im).tobytes()))


def model_stage(inq, outq):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 20)).eval()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    while True:
        item = inq.get()
        if item is None:
            return
        rid, raw = item
        x = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(1, SIZE, SIZE, 3).permute(0, 3, 1, 2).float() / 255
        with torch.inference_mode():
            p = torch.softmax(net(x - mean), -1)[0]
        outq.put((rid, int(p.argmax()), float(p.max())))


def main():
    photos = make_photos()
    ctx = mp.get_context("fork")
    q_in, q_mid, q_out = ctx.Queue(), ctx.Queue(), ctx.Queue()
    stages = [ctx.Process(target=decode_stage, args=(q_in, q_mid), daemon=True),
              ctx.Process(target=model_stage, args=(q_mid, q_out), daemon=True)]
    for p in stages:
        p.start()
    sent = {}
    lock = threading.Lock()
    window = threading.Semaphore(IN_FLIGHT)
    stop = time.time() + LIFETIME
    stats = open(STATS, "a", buffering=1 << 16)

    def uploader():
        n = 0
        while time.time() < stop:
            window.acquire()
            with lock:
                sent[n] = time.time()
            q_in.put((n, photos[n % len(photos)]))
            n += 1

    def collector():
        last = time.time()
        while True:
            rid, label, conf = q_out.get()
            t = time.time()
            with lock:
                t0 = sent.pop(rid)
            stats.write(f"{t:.4f} {(t - t0) * 1000:.3f} ok\n")
            if t - last > 0.3:
                stats.flush()
                last = t
            window.release()

    threading.Thread(target=collector, daemon=True).start()
    threading.Thread(target=uploader, daemon=True).start()
    if READY:
        open(READY, "w").close()
    while time.time() < stop:
        time.sleep(0.5)


if __name__ == "__main__":
    main()
