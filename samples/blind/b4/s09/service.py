"""Thumbnail moderation worker: consumes jobs from stdin, fans them out to worker processes."""
import io
import json
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np


def worker(jobs, results):
    import torch
    from PIL import Image

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 3)).eval()
    while True:
        job = jobs.get()
        if job is None:
            return
        t0 = job.pop("_t0")
        rng = np.random.default_rng(job["seed"])
        arr = rng.integers(0, 255, (job["size"], job["size"], 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="JPEG", quality=85)
        img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB").resize((128, 128))
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)[None]
        with torch.inference_mode():
            cls = int(net(x).argmax())
        results.put((job["id"], cls, t0))


def main():
    jobs, results = mp.Queue(maxsize=64), mp.Queue()
    procs = [mp.Process(target=worker, args=(jobs, results), daemon=True) for _ in range(2)]
    for p in procs:
        p.start()
    stats = open(os.environ["SVC_STATS_PATH"], "a") if os.environ.get("SVC_STATS_PATH") else None

    def collect():
        last = time.time()
        while True:
            _id, _cls, t0 = results.get()
            now = time.time()
            if stats:
                stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
                if now - last > 0.3:
                    stats.flush(); last = now

    threading.Thread(target=collect, daemon=True).start()
    if os.environ.get("SVC_READY_PATH"):
        open(os.environ["SVC_READY_PATH"], "w").close()
    for line in sys.stdin:
        job = json.loads(line)
        job["_t0"] = time.time()
        jobs.put(job)
    for _ in procs:
        jobs.put(None)


if __name__ == "__main__":
    main()
