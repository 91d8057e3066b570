"""Intent-scoring daemon: in-process client threads submit utterance batches to an inference pool
(torch MLP over hashed n-gram features); a monitor thread keeps live latency percentiles for the
status page.

Env:
  SVC_CLIENTS          client threads (default 4)
  SVC_POOL             inference threads (default 4)
  SVC_STATS_WINDOW     latency samples kept for the live percentiles (default 200000)
  SVC_STATS_REFRESH_S  pause between percentile refreshes (default 0 = keep it live)
"""
import bisect
import collections
import os
import random
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
POOL = int(os.environ.get("SVC_POOL", "4"))
WINDOW = int(os.environ.get("SVC_STATS_WINDOW", "200000"))
REFRESH = float(os.environ.get("SVC_STATS_REFRESH_S", "0"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
FEAT = 512

torch.set_num_threads(1)
torch.manual_seed(2)


class IntentModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layers = [torch.nn.Linear(FEAT, 256), torch.nn.GELU()]
        for _ in range(6):
            layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
        layers += [torch.nn.Linear(256, 24)]
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x):
        return torch.softmax(self.net(x), -1)


model = IntentModel().eval()


def featurize(texts):
    x = np.zeros((len(texts), FEAT), np.float32)
    for i, t in enumerate(texts):
        for w in t.split():
            x[i, zlib.crc32(w.encode()) % FEAT] += 1.0
    return torch.from_numpy(x)


def infer(texts):
    with torch.inference_mode():
        p = model(featurize(texts))
    return p.argmax(-1).tolist()


class LiveStats:
    def __init__(self, window):
        self.samples = collections.deque(maxlen=window)
        self.snapshot = {}

    def add(self, ms):
        self.samples.append(ms)

    def refresh(self):
        vals = sorted(self.samples)
        if not vals:
            return
        edges = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
        hist = [0] * (len(edges) + 1)
        for v in vals:
            hist[bisect.bisect_left(edges, v)] += 1
        n = len(vals)
        self.snapshot = {"p50": vals[n // 2], "p90": vals[int(n * 0.9)], "p99": vals[int(n * 0.99)], "hist": hist}


def main():
    rng = random.Random(0)
    words = ["book", "flight", "cancel", "refund", "weather", "play", "song", "alarm", "set", "timer", "call",
             "mom", "order", "pizza", "track", "package", "turn", "lights", "off", "on", "what", "is", "the"]
    stats = LiveStats(WINDOW)
    for _ in range(WINDOW):  # seed the window with yesterday's latencies
        stats.add(rng.lognormvariate(2.0, 0.6))
    pool = ThreadPoolExecutor(POOL)
    out = open(STATS, "a", buffering=1 << 16) if STATS else None
    rec_mu = threading.Lock()
    stop = threading.Event()
    last = [time.time()]

    def monitor():
        while not stop.is_set():
            stats.refresh()
            time.sleep(REFRESH)

    def client(i):
        r = random.Random(i)
        while not stop.is_set():
            batch = [" ".join(r.choices(words, k=r.randint(3, 12))) for _ in range(16)]
            t0 = time.time()
            try:
                pool.submit(infer, batch).result()
                ok = "ok"
            except Exception:
                ok = "err"
            t1 = time.time()
            ms = (t1 - t0) * 1000
            stats.add(ms)
            if out:
                with rec_mu:
                    out.write(f"{t1:.4f} {ms:.3f} {ok}\n")
                    if t1 - last[0] > 0.3:
                        out.flush()
                        last[0] = t1

    infer(["warm up"])
    threading.Thread(target=monitor, daemon=True).start()
    for i in range(CLIENTS):
        threading.Thread(target=client, args=(i,), daemon=True).start()
    if READY:
        open(READY, "w").close()
    try:
        while True:
            time.sleep(0.5)
            if out:
                with rec_mu:
                    out.flush()
    finally:
        stop.set()


if __name__ == "__main__":
    main()
