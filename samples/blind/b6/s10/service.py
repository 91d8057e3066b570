"""Recommendation re-ranker daemon: in-process request threads submit to a worker pool running a torch model;
a monitor thread keeps input-drift statistics for the dashboard."""
import collections
import math
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch

INTERVAL = float(os.environ.get("SVC_MONITOR_INTERVAL", "0"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "4"))
torch.set_num_threads(1)
torch.manual_seed(0)


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    os._exit(0)


threading.Thread(target=_lifetime, daemon=True).start()


class ReRanker(torch.nn.Module):
    def __init__(self, d=256, depth=6):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(d, d), torch.nn.LayerNorm(d), torch.nn.ReLU()]
        self.body = torch.nn.Sequential(*layers)
        self.out = torch.nn.Linear(d, 1)

    def forward(self, x):
        return self.out(self.body(x)).squeeze(-1)


model = ReRanker().eval()
recent = collections.deque(maxlen=2000)
drift = {}


def monitor():
    """Per-feature mean / std / 10-bin histogram over the recent window."""
    while True:
        rows = list(recent)
        if rows:
            nfeat = len(rows[0])
            stats = {}
            for j in range(nfeat):
                col = [r[j] for r in rows]
                m = sum(col) / len(col)
                sd = math.sqrt(sum((c - m) ** 2 for c in col) / len(col))
                hist = [0] * 10
                for c in col:
                    hist[min(9, max(0, int((c + 3) / 0.6)))] += 1
                stats[j] = (m, sd, hist)
            drift.update(stats)
        if INTERVAL > 0:
            time.sleep(INTERVAL)


def rerank(feats):
    x = torch.tensor(feats)
    with torch.inference_mode():
        s = model(x)
    recent.append(feats[0][:16])
    return torch.argsort(s, descending=True).tolist()


pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="infer")
stats = open(os.environ["SVC_STATS_PATH"], "a", buffering=1)
stats_lock = threading.Lock()


def client(seed):
    rnd = random.Random(seed)
    while True:
        feats = [[rnd.gauss(0, 1) for _ in range(256)] for _ in range(8)]
        t0 = time.time()
        pool.submit(rerank, feats).result()
        t1 = time.time()
        with stats_lock:
            stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


for _ in range(50):
    rerank([[random.gauss(0, 1) for _ in range(256)] for _ in range(8)])
threading.Thread(target=monitor, daemon=True, name="drift-monitor").start()
for i in range(CLIENTS):
    threading.Thread(target=client, args=(i,), daemon=True, name=f"client-{i}").start()
open(os.environ["SVC_READY_PATH"], "w").close()
while True:
    time.sleep(1)
