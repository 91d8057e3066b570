"""Click-log scoring pipeline: raw log lines -> parser process(es) -> model process -> results."""
import multiprocessing as mp
import os
import random
import threading
import time
import zlib

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
PARSERS = int(os.environ.get("SVC_PARSERS", "1"))
INFLIGHT = int(os.environ.get("SVC_INFLIGHT", "24"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s12-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s12-ready")
DIM = 512


def make_line(r):
    parts = [f"k{r.randrange(400)}={r.choice(['a%20b', 'x', 'long%2Fpath%2Fto', 'q%3D1'])}{r.randrange(10**6)}"
             for _ in range(640)]
    return "&".join(parts)


def unquote(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "%" and i + 2 < len(s):
            out.append(chr(int(s[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse(line):
    vec = [0.0] * DIM
    for kv in line.split("&"):
        k, _, v = kv.partition("=")
        v = unquote(v)
        h = zlib.crc32(k.encode()) % DIM
        vec[h] += 1.0
        for tok in v.split("/"):
            vec[(h + len(tok) * 31 + sum(map(ord, tok[:6]))) % DIM] += 0.5
    return np.asarray(vec, dtype=np.float32)


def parser_proc(inq, featq):
    while True:
        item = inq.get()
        if item is None:
            return
        rid, t0, line = item
        featq.put((rid, t0, parse(line)))


def model_proc(featq, outq):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(DIM, 1536), torch.nn.ReLU(),
                              torch.nn.Linear(1536, 1536), torch.nn.ReLU(), torch.nn.Linear(1536, 1)).eval()
    while True:
        batch = [featq.get()]
        while len(batch) < 8:
            try:
                batch.append(featq.get_nowait())
            except Exception:
                break
        x = torch.from_numpy(np.stack([b[2] for b in batch]))
        with torch.inference_mode():
            y = net(x).squeeze(1).tolist()
        for (rid, t0, _), s in zip(batch, y):
            outq.put((rid, t0, s))


def main():
    stop_at = time.time() + LIFETIME
    ctx = mp.get_context("fork")
    inq, featq, outq = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=parser_proc, args=(inq, featq), daemon=True) for _ in range(PARSERS)]
    procs.append(ctx.Process(target=model_proc, args=(featq, outq), daemon=True))
    for p in procs:
        p.start()
    r = random.Random(1)
    lines = [make_line(r) for _ in range(64)]
    window = threading.Semaphore(INFLIGHT)
    records = []

    def collect():
        while True:
            rid, t0, s = outq.get()
            records.append(f"{time.time():.4f} {(time.time() - t0) * 1000:.3f} ok\n")
            window.release()

    def feed():
        rid = 0
        while time.time() < stop_at:
            window.acquire()
            inq.put((rid, time.time(), lines[rid % 64]))
            rid += 1

    threading.Thread(target=collect, daemon=True).start()
    threading.Thread(target=feed, daemon=True).start()
    time.sleep(1.5)
    open(READY, "w").close()
    with open(STATS, "a") as f:
        while time.time() < stop_at + 1:
            time.sleep(0.3)
            batch = records[:]
            del records[:len(batch)]
            f.writelines(batch)
            f.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
