"""Click-through scorer: two model worker processes serve scoring calls from the API front threads;
a catalogue refresher child keeps item similarities up to date."""
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
REFRESH_NICE = int(os.environ.get("SVC_REFRESH_NICE", "0"))
N_WORKERS = 2
FEAT = 128


def model_worker(conn):
    import torch
    import torch.nn as nn
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEAT, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 1)).eval()
    while True:
        try:
            x = conn.recv()
        except EOFError:
            return
        with torch.inference_mode():
            p = torch.sigmoid(model(torch.from_numpy(x))).squeeze(-1).numpy()
        conn.send(p)


def front(conn, rec, stop, seed):
    rng = np.random.default_rng(seed)
    while time.time() < stop:
        x = rng.standard_normal((256, FEAT)).astype(np.float32)
        t0 = time.time()
        conn.send(x)
        conn.recv()
        t1 = time.time()
        if rec:
            rec.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    nice = REFRESH_NICE
    refresher = subprocess.Popen([sys.executable, os.path.join(here, "refresher.py")],
                                 env={**os.environ, "OPENBLAS_NUM_THREADS": "2"},
                                 preexec_fn=(lambda: os.nice(nice)) if nice else None)
    conns = []
    for _ in range(N_WORKERS):
        a, b = mp.Pipe()
        mp.Process(target=model_worker, args=(b,), daemon=True).start()
        conns.append(a)
    for c in conns:
        c.send(np.zeros((64, FEAT), np.float32))
        c.recv()
    rec = open(STATS, "a", buffering=1) if STATS else None
    stop = time.time() + LIFETIME
    threads = [threading.Thread(target=front, args=(c, rec, stop, i), daemon=True)
               for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    time.sleep(max(0.0, stop - time.time()))
    refresher.terminate()
    os._exit(0)


if __name__ == "__main__":
    main()
