"""Embedding scorer served from a thread pool; load comes from in-process client threads."""
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SHARED = os.environ.get("SVC_SHARED_CLIENT", "1") == "1"
WORKERS = int(os.environ.get("SVC_WORKERS", "6"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "12"))
CACHE_PORT = int(os.environ.get("SVC_CACHE_PORT", "18855"))

rng = np.random.default_rng(5)
W = (rng.standard_normal((64, 256)) / 8).astype(np.float32)
ITEMS = rng.standard_normal((2000, 256)).astype(np.float32)


class CacheClient:
    def __init__(self, port):
        self._sock = socket.create_connection(("127.0.0.1", port))
        self._file = self._sock.makefile("rwb")
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            self._file.write(f"GET {key}\n".encode())
            self._file.flush()
            line = self._file.readline()
        return np.frombuffer(bytes.fromhex(line.strip().decode()), dtype=np.float32)


shared_client = None
local = threading.local()


def get_client():
    if SHARED:
        return shared_client
    c = getattr(local, "client", None)
    if c is None:
        c = local.client = CacheClient(CACHE_PORT)
    return c


def handle(key):
    emb = get_client().get(key)
    user = np.tanh(emb @ W)
    scores = ITEMS @ user
    return int(np.argmax(scores))


def main():
    global shared_client
    cache = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cache.py")])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", CACHE_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    shared_client = CacheClient(CACHE_PORT)
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="worker")
    rec = open(os.environ.get("SVC_STATS_PATH", "/dev/null"), "a", buffering=1)
    rec_lock = threading.Lock()
    stop = time.time() + LIFETIME

    def client(cid):
        n = 0
        while time.time() < stop:
            t = time.time()
            pool.submit(handle, cid * 7919 + n).result()
            n += 1
            now = time.time()
            with rec_lock:
                rec.write(f"{now:.4f} {(now - t) * 1000:.3f} ok\n")

    threads = [threading.Thread(target=client, args=(i,), name=f"client-{i}", daemon=True) for i in range(CLIENTS)]
    for th in threads:
        th.start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    for th in threads:
        th.join()
    cache.terminate()
    os._exit(0)


if __name__ == "__main__":
    main()
