import json
import os
import sys
import time

import numpy as np

N = 6_000_000
REUSE = os.environ.get("SVC_BUFFERS", "fresh") == "reuse"
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")

rng = np.random.default_rng(0)
signal = rng.standard_normal(N)
proj = rng.standard_normal((64, 1024))


class Normalizer:
    def __init__(self):
        if REUSE:
            self.a = np.empty(N)
            self.b = np.empty(N)
            self.c = np.empty(N)

    def __call__(self, gain, offset):
        if REUSE:
            scaled = np.multiply(signal, gain, out=self.a)
            shifted = np.add(scaled, offset, out=self.b)
            energy = np.multiply(shifted, shifted, out=self.c)
        else:
            scaled = signal * gain
            shifted = scaled + offset
            energy = shifted * shifted
        frames = energy[: 1024 * 256].reshape(256, 1024)
        return proj @ frames.mean(axis=0)


def main():
    norm = Normalizer()
    stats = open(STATS, "a", buffering=1 << 16)
    if READY:
        open(READY, "w").close()
    last = time.time()
    for line in sys.stdin:
        t0 = time.time()
        job = json.loads(line)
        emb = norm(job["gain"], job["offset"])
        _ = float(emb.sum())
        t1 = time.time()
        stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
        if t1 - last > 0.3:
            stats.flush()
            last = t1


if __name__ == "__main__":
    main()
