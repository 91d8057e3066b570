"""Inference service."""
import argparse
import io
import json
import os
import queue
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageFilter

import model

HERE = os.path.dirname(os.path.abspath(__file__))
STAGE_THREADS = int(os.environ.get("SVC_STAGE", "1"))
WORKERS = int(os.environ.get("SVC_WORKERS", "8"))


class Pipeline:
    """Decode/resize stage fed by a queue, then the model in the caller thread."""

    def __init__(self, n):
        self.q = queue.Queue()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(n)]
        for t in self.threads:
            t.start()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.sess = ort.InferenceSession(model.build(os.path.join(HERE, "head.onnx"), dims=(3 * 64 * 64, 128, 10)),
                                         opts, providers=["CPUExecutionProvider"])

    def _loop(self):
        while True:
            data, fut = self.q.get()
            try:
                fut.set_result(self._prep(data))
            except Exception as e:  # noqa: BLE001
                fut.set_exception(e)

    @staticmethod
    def _prep(data):
        img = Image.open(io.BytesIO(data)).convert("RGB")
        img = img.filter(ImageFilter.GaussianBlur(1.2))
        img = img.resize((64, 64), Image.LANCZOS)
        arr = np.asarray(img, dtype=np.float32) / 255.0
        return (arr - 0.5).reshape(1, -1)

    def submit(self, data):
        fut = Future()
        self.q.put((data, fut))
        return fut

    def predict(self, data):
        x = self.submit(data).result()
        return int(self.sess.run(None, {"x": x})[0].argmax())


def make_images(n):
    out = []
    for s in range(n):
        rng = np.random.default_rng(s)
        base = Image.fromarray(rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)).resize((640, 480), Image.BICUBIC)
        buf = io.BytesIO()
        base.save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=0)
    a = ap.parse_args()
    pipe = Pipeline(STAGE_THREADS)
    images = make_images(16)
    pipe.predict(images[0])
    lat, lock, stop = [], threading.Lock(), threading.Event()
    t_start = time.time()
    t_meas = t_start + a.warmup

    def client(i):
        rng = random.Random(i)
        while not stop.is_set():
            t0 = time.time()
            pipe.predict(rng.choice(images))
            t1 = time.time()
            if t0 >= t_meas:
                with lock:
                    lat.append(t1 - t0)

    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    with ThreadPoolExecutor(WORKERS) as ex:
        for i in range(WORKERS):
            ex.submit(client, i)
        try:
            while not a.seconds or time.time() - t_start < a.seconds:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        stop.set()
    t_end = time.time()
    lat.sort()
    n = len(lat)
    print(json.dumps({"done": n, "rps": round(n / max(1e-9, t_end - t_meas), 2),
                      "p50_ms": round(lat[n // 2] * 1000, 2) if n else None,
                      "p99_ms": round(lat[min(n - 1, int(n * 0.99))] * 1000, 2) if n else None}), flush=True)


if __name__ == "__main__":
    main()
