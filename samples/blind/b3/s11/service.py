"""Inference service."""
import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import time

import numpy as np

RATE = float(os.environ.get("SVC_RATE", "0.2"))


class Scorer:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.w1 = rng.standard_normal((256, 256)).astype(np.float32) * 0.06
        self.w2 = rng.standard_normal((256, 10)).astype(np.float32) * 0.06

    def score(self, x):
        h = np.tanh(x @ self.w1)
        z = h @ self.w2
        return int(z.argmax())


def feed(conn, rate):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    rng = random.Random(0)
    seq = 0
    while True:
        time.sleep(rng.expovariate(rate))
        seq += 1
        conn.send({"id": seq, "ts": time.time(), "x": [rng.random() for _ in range(256)]})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--warmup", type=float, default=0)
    a = ap.parse_args()
    rx, tx = mp.Pipe(duplex=False)
    p = mp.Process(target=feed, args=(tx, RATE), daemon=True)
    p.start()
    scorer = Scorer()
    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    t_start = time.time()
    t_meas = t_start + a.warmup
    lat = []
    try:
        while not a.seconds or time.time() - t_start < a.seconds:
            if a.seconds and not rx.poll(max(0.0, a.seconds - (time.time() - t_start))):
                break
            job = rx.recv()
            scorer.score(np.asarray(job["x"], dtype=np.float32))
            t1 = time.time()
            if job["ts"] >= t_meas:
                lat.append(t1 - job["ts"])
    except KeyboardInterrupt:
        pass
    t_end = time.time()
    p.terminate()
    lat.sort()
    n = len(lat)
    print(json.dumps({"done": n, "rps": round(n / max(1e-9, t_end - t_meas), 3),
                      "p50_ms": round(lat[n // 2] * 1000, 3) if n else None,
                      "p99_ms": round(lat[min(n - 1, int(n * 0.99))] * 1000, 3) if n else None}), flush=True)


if __name__ == "__main__":
    main()
