"""Bot-traffic detector: reads access-log records from stdin, featurises them in parser processes
and scores them in model worker processes."""
import multiprocessing as mp
import os
import sys
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
PARSERS = int(os.environ.get("SVC_PARSERS", "1"))
MODEL_WORKERS = 2
DIM = 512


def _h(s):
    h = 5381
    for ch in s:
        h = (h * 33 + ord(ch)) & 0xFFFFFFFF
    return h


def featurize(line):
    ts, user, url, agent, ref, size, status = line.rstrip("\n").split("|")
    v = [0.0] * DIM
    path, _, query = url.partition("?")
    for seg in path.strip("/").split("/"):
        v[_h("p:" + seg) % DIM] += 1.0
    for kv in query.split("&") if query else []:
        k, _, val = kv.partition("=")
        v[_h("k:" + k) % DIM] += 1.0
        v[_h("kv:" + kv) % DIM] += 0.5
    a = agent.lower()
    for n in (3, 4, 5, 6):
        for i in range(len(a) - n + 1):
            g = a[i:i + n]
            v[_h(g) % DIM] += 0.2
            v[_h("#" + g) % DIM] -= 0.1
        for i in range(len(url) - n + 1):
            v[_h("u" + url[i:i + n]) % DIM] += 0.1
        for i in range(len(ref) - n + 1):
            v[_h("r" + ref[i:i + n]) % DIM] += 0.1
    v[_h("s:" + status) % DIM] += 1.0
    v[0] = float(len(path))
    v[1] = float(int(size)) / 1e4
    return float(ts), v


def parser(inq, outq):
    while True:
        batch = inq.get()
        if batch is None:
            return
        outq.put([featurize(line) for line in batch])


def model_worker(outq, stats_path):
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((DIM, 64)).astype(np.float32) * 0.05
    w2 = rng.standard_normal(64).astype(np.float32) * 0.1
    rec = open(stats_path, "a", buffering=1) if stats_path else None
    while True:
        items = outq.get()
        if items is None:
            return
        x = np.asarray([v for _, v in items], dtype=np.float32)
        p = 1.0 / (1.0 + np.exp(-(np.maximum(x @ w1, 0) @ w2)))
        now = time.time()
        if rec:
            rec.write("".join(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n" for t0, _ in items))


def main():
    inq = mp.Queue(maxsize=16)
    outq = mp.Queue(maxsize=16)
    procs = [mp.Process(target=parser, args=(inq, outq), daemon=True) for _ in range(PARSERS)]
    procs += [mp.Process(target=model_worker, args=(outq, STATS), daemon=True) for _ in range(MODEL_WORKERS)]
    for p in procs:
        p.start()
    if READY:
        open(READY, "w").close()
    stop = time.time() + LIFETIME
    batch = []
    for line in sys.stdin:
        batch.append(line)
        if len(batch) == 8:
            inq.put(batch)
            batch = []
            if time.time() > stop:
                break
    os._exit(0)


if __name__ == "__main__":
    main()
