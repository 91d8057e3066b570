"""Sensor anomaly pipeline: stdin reader -> parse stage -> scoring stage -> result writer.
Stages are multiprocessing worker processes connected by queues."""
import json
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
PARSERS = int(os.environ.get("SVC_PARSERS", "1"))
SCORERS = int(os.environ.get("SVC_SCORERS", "2"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
CHANNELS = 2000
GROUP = 50
CAL = [(1.0 + (i % 7) * 0.01, 0.001 * (i % 5), -0.0001 * (i % 3)) for i in range(CHANNELS)]
STATUS = {"A": 0.0, "B": 1.0, "C": 2.0, "D": 3.0}


def parse_record(line):
    rec = json.loads(line)
    values = [0.0] * CHANNELS
    flags = [0.0] * CHANNELS
    for item in rec["payload"].split(";"):
        key, _, rest = item.partition("=")
        val, _, status = rest.partition("|")
        idx = int(key[2:])
        a, b, c = CAL[idx]
        v = float(val)
        values[idx] = a * v + b * v * v + c * v * v * v
        flags[idx] = STATUS.get(status, -1.0)
    mean = sum(values) / CHANNELS
    var = sum((v - mean) ** 2 for v in values) / CHANNELS
    sd = var ** 0.5 or 1.0
    z = [(v - mean) / sd for v in values]
    feats = []
    for alpha in (0.5, 0.2, 0.1, 0.05):
        acc = 0.0
        smooth = []
        for v in z:
            acc = (1.0 - alpha) * acc + alpha * v
            smooth.append(acc)
        for g in range(0, CHANNELS, GROUP):
            chunk = smooth[g:g + GROUP]
            feats.append(max(chunk))
            feats.append(sum(chunk) / GROUP)
    alarms = [0.0] * (CHANNELS // GROUP)
    for i, f in enumerate(flags):
        if f >= 2.0:
            alarms[i // GROUP] += 1.0
    return rec["device"], feats, alarms


def parse_stage(inq, outq):
    while True:
        item = inq.get()
        if item is None:
            break
        seq, t_in, line = item
        device, values, flags = parse_record(line)
        outq.put((seq, t_in, device, values, flags))


def score_stage(inq, outq):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8 * (CHANNELS // GROUP) + CHANNELS // GROUP, 8)).astype(np.float32)
    while True:
        item = inq.get()
        if item is None:
            break
        seq, t_in, device, values, flags = item
        x = np.asarray(values + flags, dtype=np.float32)
        z = np.tanh(x @ w)
        outq.put((seq, t_in, float(np.abs(z).max())))


def writer(resq, stop):
    f = open(STATS, "a", buffering=1 << 16)
    last = time.time()
    while not stop.is_set():
        try:
            seq, t_in, s = resq.get(timeout=0.5)
        except Exception:
            continue
        now = time.time()
        f.write(f"{now:.4f} {(now - t_in) * 1000:.3f} ok\n")
        if now - last > 0.5:
            f.flush()
            last = now
    f.flush()


def main():
    ctx = mp.get_context("fork")
    rawq = ctx.Queue(maxsize=32)
    parsedq = ctx.Queue(maxsize=32)
    resq = ctx.Queue()
    procs = [ctx.Process(target=parse_stage, args=(rawq, parsedq), daemon=True) for _ in range(PARSERS)]
    procs += [ctx.Process(target=score_stage, args=(parsedq, resq), daemon=True) for _ in range(SCORERS)]
    for p in procs:
        p.start()
    stop = threading.Event()
    wt = threading.Thread(target=writer, args=(resq, stop), daemon=True)
    wt.start()
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    if READY:
        open(READY, "w").close()
    seq = 0
    for line in sys.stdin.buffer:
        rawq.put((seq, time.time(), line))
        seq += 1
    stop.set()
    time.sleep(1)
    os._exit(0)


if __name__ == "__main__":
    main()
