"""Scoring consumer: pulls jobs from the local broker, runs a torch model, acks results."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import torch

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
BROKER_PORT = int(os.environ.get("SVC_BROKER_PORT", "18831"))
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
REFRESH_NICE = int(os.environ.get("SVC_REFRESH_NICE", "0"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
HERE = os.path.dirname(os.path.abspath(__file__))

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 16),
).eval()

lines = []
mu = threading.Lock()


def consume(stop):
    torch.set_num_threads(1)
    s = socket.create_connection(("127.0.0.1", BROKER_PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    while time.time() < stop:
        t = time.perf_counter()
        s.sendall(b"NEXT\n")
        job = json.loads(f.readline())
        x = torch.tensor(job["x"]).view(1, 256).repeat(32, 1)
        with torch.inference_mode():
            out = model(x).argmax(1)
        s.sendall(f"DONE {job['id']} {int(out[0])}\n".encode())
        f.readline()
        with mu:
            lines.append(f"{time.time():.4f} {(time.perf_counter() - t) * 1000:.3f} ok\n")
    s.close()


def main():
    stop = time.time() + LIFETIME
    broker = subprocess.Popen([sys.executable, os.path.join(HERE, "broker.py"), str(BROKER_PORT)])
    refresher = subprocess.Popen([sys.executable, os.path.join(HERE, "refresher.py")],
                                 preexec_fn=(lambda: os.nice(REFRESH_NICE)) if REFRESH_NICE else None)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", BROKER_PORT), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    with torch.inference_mode():
        model(torch.zeros(32, 256))
    threads = [threading.Thread(target=consume, args=(stop,), daemon=True) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    out = open(STATS, "a")
    while time.time() < stop:
        time.sleep(0.3)
        with mu:
            batch = lines[:]
            del lines[:]
        out.writelines(batch)
        out.flush()
    for p in (refresher, broker):
        p.terminate()


if __name__ == "__main__":
    main()
