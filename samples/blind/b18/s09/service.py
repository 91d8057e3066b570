"""Recommendation job consumer: pulls jobs from the local broker, fetches the user's features
from the feature store, scores the job's items and records the result. Listens on nothing."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CONSUMERS = int(os.environ.get("SVC_CONSUMERS", "2"))
BROKER_PORT = int(os.environ.get("SVC_BROKER_PORT", "18859"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18869"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
HERE = os.path.dirname(os.path.abspath(__file__))

ITEMS = np.random.default_rng(0).standard_normal((50000, 32)).astype(np.float32)
out_lock = threading.Lock()
out = open(STATS, "a", buffering=1 << 16)
last_flush = [time.time()]


def connect(port):
    for _ in range(100):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s, s.makefile("rb")
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"cannot reach port {port}")


def consume():
    bsock, bfile = connect(BROKER_PORT)
    fsock, ffile = connect(STORE_PORT)
    while True:
        t0 = time.time()
        bsock.sendall(b"NEXT\n")
        job = json.loads(bfile.readline())
        fsock.sendall(f"GET {job['user']}\n".encode())
        feats = np.asarray(json.loads(ffile.readline())["f"], dtype=np.float32)
        scores = ITEMS[job["items"]] @ feats
        best = int(np.argmax(scores))
        t1 = time.time()
        with out_lock:
            out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
            if t1 - last_flush[0] > 0.5:
                out.flush()
                last_flush[0] = t1


def main():
    life = str(LIFETIME + 5)
    subprocess.Popen([sys.executable, os.path.join(HERE, "broker.py"), str(BROKER_PORT), life])
    subprocess.Popen([sys.executable, os.path.join(HERE, "featstore.py"), str(STORE_PORT), life])
    threads = [threading.Thread(target=consume, daemon=True) for _ in range(CONSUMERS)]
    for t in threads:
        t.start()
    if READY:
        open(READY, "w").close()
    time.sleep(LIFETIME)
    with out_lock:
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
