"""Photo moderation pipeline (no port): an uploader process enqueues JPEGs on a multiprocessing.Queue;
the dispatcher prepares them and fans out to model worker processes; results come back on a queue."""
import io
import multiprocessing as mp
import os
import signal
import threading
import time

import numpy as np
from PIL import Image

DECODE_IN = os.environ.get("SVC_DECODE_IN", "dispatcher")
WORKERS = 2


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


def prepare(raw):
    img = Image.open(io.BytesIO(raw)).convert("RGB")
    img = img.resize((224, 224), Image.LANCZOS)
    return np.asarray(img)


def uploader(jobs):
    rng = np.random.default_rng(0)
    pics = []
    for s in range(6):
        a = (rng.random((960, 1280, 3)) * 50 + np.linspace(0, 200, 1280)[None, :, None]).astype(np.uint8)
        b = io.BytesIO()
        Image.fromarray(a).save(b, format="JPEG", quality=90)
        pics.append(b.getvalue())
    i = 0
    while True:
        jobs.put((i, time.time(), pics[i % len(pics)]))
        i += 1


def model_worker(work, results):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 5, stride=4, padding=2), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 2)).eval()
    while True:
        jid, ts, payload = work.get()
        x = prepare(payload) if isinstance(payload, bytes) else payload
        t = torch.from_numpy(x).permute(2, 0, 1).unsqueeze(0).float().div_(255)
        with torch.inference_mode():
            y = net(t)[0]
        results.put((jid, ts, int(y.argmax())))


def collector(results, path):
    with open(path, "a", buffering=1) as f:
        while True:
            jid, ts, label = results.get()
            now = time.time()
            f.write(f"{now:.4f} {(now - ts) * 1000:.3f} ok\n")


def main():
    threading.Thread(target=_lifetime, daemon=True).start()
    ctx = mp.get_context("fork")
    jobs, work, results = ctx.Queue(maxsize=16), ctx.Queue(maxsize=8), ctx.Queue()
    procs = [ctx.Process(target=model_worker, args=(work, results), daemon=True) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    threading.Thread(target=collector, args=(results, os.environ["SVC_STATS_PATH"]), daemon=True).start()
    ctx.Process(target=uploader, args=(jobs,), daemon=True).start()
    open(os.environ["SVC_READY_PATH"], "w").close()
    while True:
        jid, ts, raw = jobs.get()
        if DECODE_IN == "dispatcher":
            work.put((jid, ts, prepare(raw)))
        else:
            work.put((jid, ts, raw))


if __name__ == "__main__":
    main()
