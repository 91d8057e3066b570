"""Session scoring daemon: scores click sessions from the in-process request feed."""
import collections
import math
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

torch.set_num_threads(1)
MONITOR = os.environ.get("SVC_MONITOR_IMPL", "python")
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = torch.nn.GRUCell(32, 64)
        self.head = torch.nn.Linear(64, 1)

    @torch.inference_mode()
    def forward(self, seq):
        h = torch.zeros(1, 64)
        for t in range(seq.shape[0]):
            h = self.cell(seq[t:t + 1], h)
        return torch.sigmoid(self.head(h)).item()


class DriftMonitor:
    """Keeps rolling statistics of recent model inputs for the dashboard."""

    def __init__(self, window=40000):
        self.values = collections.deque(maxlen=window)
        self.snapshot = {}
        self.mu = threading.Lock()

    def observe(self, arr):
        with self.mu:
            self.values.extend(arr.ravel()[:64].tolist())

    def compute(self):
        with self.mu:
            vals = list(self.values)
        if not vals:
            return {}
        if MONITOR == "python":
            n = len(vals)
            mean = sum(vals) / n
            var = sum((v - mean) ** 2 for v in vals) / n
            bins = [0] * 20
            for v in vals:
                bins[min(19, max(0, int((v + 3.0) / 0.3)))] += 1
            return {"mean": mean, "std": math.sqrt(var), "bins": bins}
        a = np.asarray(vals)
        hist = np.bincount(np.clip(((a + 3.0) / 0.3).astype(int), 0, 19), minlength=20)
        return {"mean": float(a.mean()), "std": float(a.std()), "bins": hist.tolist()}

    def run(self):
        while True:
            self.snapshot = self.compute()
            time.sleep(0.02)


torch.manual_seed(0)
scorer = Scorer().eval()
monitor = DriftMonitor()
pool = ThreadPoolExecutor(max_workers=4)


def score(session):
    x = torch.from_numpy(session)
    monitor.observe(session)
    return scorer(x)


def client(stats, stop):
    rng = np.random.default_rng(threading.get_ident() % 1000)
    last = time.time()
    while not stop.is_set():
        session = rng.standard_normal((16, 32)).astype(np.float32)
        t0 = time.perf_counter()
        pool.submit(score, session).result()
        now = time.time()
        if stats:
            stats.write(f"{now:.4f} {(time.perf_counter() - t0) * 1000:.3f} ok\n")
            if now - last > 0.3:
                stats.flush(); last = now


def main():
    threading.Thread(target=monitor.run, daemon=True).start()
    for _ in range(200):
        monitor.observe(np.random.standard_normal(64).astype(np.float32))
    stats = open(os.environ["SVC_STATS_PATH"], "a", buffering=1 << 16) if os.environ.get("SVC_STATS_PATH") else None
    stop = threading.Event()
    if os.environ.get("SVC_READY_PATH"):
        open(os.environ["SVC_READY_PATH"], "w").close()
    threads = [threading.Thread(target=client, args=(stats, stop), daemon=True) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        stop.set()


if __name__ == "__main__":
    main()
