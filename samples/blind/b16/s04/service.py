"""Embedding worker: client threads submit user ids to a thread pool that fetches features and encodes them."""
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "8"))
SHARED_CONN = os.environ.get("SVC_SHARED_CONN", "1") == "1"
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18804"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/b16-s04-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/b16-s04-ready")
ROW_BYTES = 512 * 4

torch.set_num_threads(1)
torch.manual_seed(0)


class StoreClient:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", STORE_PORT))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rwb")

    def get(self, key):
        self.f.write(b"%d\n" % key)
        self.f.flush()
        return np.frombuffer(self.f.read(ROW_BYTES), dtype=np.float32)


class Features:
    """Feature lookups; one connection shared by the pool, or one per thread."""

    def __init__(self):
        self._local = threading.local()
        self._conn = StoreClient() if SHARED_CONN else None
        self._mu = threading.Lock()

    def get(self, key):
        if SHARED_CONN:
            with self._mu:
                return self._conn.get(key)
        c = getattr(self._local, "c", None)
        if c is None:
            c = self._local.c = StoreClient()
        return c.get(key)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))

    @torch.inference_mode()
    def forward(self, x):
        return torch.nn.functional.normalize(self.net(x), dim=-1)


def wait_store():
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT)).close()
            return
        except OSError:
            time.sleep(0.1)


store_proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "feature_store.py"),
                               str(STORE_PORT), str(LIFETIME + 5)])
wait_store()
features = Features()
encoder = Encoder().eval()
pool = ThreadPoolExecutor(max_workers=CLIENTS, thread_name_prefix="encode")
out_lock = threading.Lock()
out = open(STATS, "a", buffering=1 << 16)
deadline = time.time() + LIFETIME


def handle(user_id):
    row = features.get(user_id)
    emb = encoder(torch.from_numpy(row.copy())[None])
    return float(emb[0, 0])


def client(seed):
    rng = np.random.default_rng(seed)
    while time.time() < deadline:
        uid = int(rng.integers(0, 1_000_000))
        t0 = time.time()
        pool.submit(handle, uid).result()
        t1 = time.time()
        with out_lock:
            out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


if __name__ == "__main__":
    handle(1)
    threads = [threading.Thread(target=client, args=(i,), name=f"client-{i}") for i in range(CLIENTS)]
    for t in threads:
        t.start()
    open(READY, "w").close()
    while time.time() < deadline:
        time.sleep(0.3)
        with out_lock:
            out.flush()
    for t in threads:
        t.join()
    out.close()
    pool.shutdown()
    store_proc.terminate()
