"""Nearest-item search worker: reads requests from stdin, scores the whole item table."""
import json
import os
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
N_ITEMS = int(os.environ.get("SVC_ITEMS", "1200000"))
DIM = int(os.environ.get("SVC_DIM", "64"))
FULL_DIM = 64

rng = np.random.default_rng(9)
items = rng.standard_normal((N_ITEMS, DIM), dtype=np.float32)
proj = (rng.standard_normal((FULL_DIM, DIM)) / np.sqrt(DIM)).astype(np.float32)


def user_vector(uid):
    v = np.random.default_rng(uid).standard_normal(FULL_DIM, dtype=np.float32)
    return v @ proj if DIM != FULL_DIM else v


def search(req):
    q = user_vector(req["user"])
    scores = items @ q
    k = req.get("k", 10)
    top = np.argpartition(scores, -k)[-k:]
    return top[np.argsort(-scores[top])].tolist()


def main():
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    rec = open(os.environ.get("SVC_STATS_PATH", "/dev/null"), "a", buffering=1)
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    out = open(os.devnull, "w")
    for line in sys.stdin:
        t = time.time()
        req = json.loads(line)
        res = search(req)
        out.write(json.dumps({"id": req["id"], "items": res}) + "\n")
        now = time.time()
        rec.write(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")
    os._exit(0)


if __name__ == "__main__":
    main()
