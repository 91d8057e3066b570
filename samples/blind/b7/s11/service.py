"""Batch embedding worker: a dispatcher feeds jobs through multiprocessing queues to 2 torch workers.

A log-compaction housekeeping child runs next to it. No port; load is generated in-process.
"""
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time

LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
N_WORKERS = 2


def worker(jobs, results):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=192, nhead=4, dim_feedforward=768, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, num_layers=3, enable_nested_tensor=False).eval()
    results.put(("ready", None, None))
    while True:
        job = jobs.get()
        if job is None:
            return
        jid, t_sub, seed = job
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(8, 48, 192, generator=g)
        with torch.inference_mode():
            emb = enc(x).mean(1)
        results.put((jid, t_sub, float(emb.norm())))


def main():
    ctx = mp.get_context("fork")
    jobs, results = ctx.Queue(maxsize=6), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(jobs, results), daemon=True) for _ in range(N_WORKERS)]
    for p in procs:
        p.start()
    for _ in procs:
        results.get()
    env = dict(os.environ, COMPACTOR_NICE=os.environ.get("SVC_COMPACTOR_NICE", "0"))
    comp = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "compactor.py"), "2"], env=env)

    stats = open(STATS, "a", buffering=1) if STATS else None
    done = [0]
    t_start = time.time()

    def finish(*_):
        print(json.dumps({"jobs": done[0], "uptime_s": round(time.time() - t_start, 1)}), flush=True)
        comp.kill()
        if stats:
            stats.flush()
        os._exit(0)

    signal.signal(signal.SIGTERM, finish)
    threading.Timer(LIFETIME, finish).start()

    def feed():
        jid = 0
        while True:
            jobs.put((jid, time.time(), jid))
            jid += 1

    threading.Thread(target=feed, daemon=True).start()
    time.sleep(1.0)
    if READY:
        open(READY, "w").close()
    while True:
        jid, t_sub, _ = results.get()
        t1 = time.time()
        done[0] += 1
        if stats:
            stats.write(f"{t1:.4f} {(t1 - t_sub) * 1000:.3f} ok\n")


if __name__ == "__main__":
    main()
