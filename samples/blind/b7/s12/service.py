"""Re-ranking consumer: pulls jobs from the broker child over TCP, runs cross-attention pooling in NumPy."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
BROKER_PORT = int(os.environ.get("SVC_BROKER_PORT", "18505"))
EINSUM_OPT = os.environ.get("SVC_EINSUM_OPTIMIZE", "0") == "1"
CONSUMERS = 1
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")

broker = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "broker.py"), str(BROKER_PORT)],
                          stdout=subprocess.PIPE, text=True)
broker.stdout.readline()

stats = open(STATS, "a", buffering=1) if STATS else None
mu = threading.Lock()
done = [0]
t_start = time.time()


_shards = {}


def shard(sid, n, dim):
    if sid not in _shards:
        r = np.random.default_rng(1000 + sid)
        _shards[sid] = (r.standard_normal((n, dim), dtype=np.float32), r.standard_normal((n, dim), dtype=np.float32))
    return _shards[sid]


def rerank(job):
    r = np.random.default_rng(job["seed"])
    q = r.standard_normal((job["queries"], job["dim"]), dtype=np.float32)
    k, v = shard(job["shard"], job["keys"], job["dim"])
    att = np.einsum("qd,kd->qk", q, k, optimize=EINSUM_OPT) / np.sqrt(job["dim"])
    att -= att.max(1, keepdims=True)
    np.exp(att, out=att)
    att /= att.sum(1, keepdims=True)
    pooled = np.einsum("qk,kd->qd", att, v, optimize=EINSUM_OPT)
    score = np.einsum("qd,qd->q", pooled, q)
    return np.argsort(-score)[:10].tolist()


def consume():
    s = socket.create_connection(("127.0.0.1", BROKER_PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    for line in f:
        t0 = time.time()
        job = json.loads(line)
        top = rerank(job)
        s.sendall((json.dumps({"ack": job["job"], "top": top}) + "\n").encode())
        t1 = time.time()
        with mu:
            done[0] += 1
            if stats:
                stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


def finish(*_):
    print(json.dumps({"jobs": done[0], "uptime_s": round(time.time() - t_start, 1)}), flush=True)
    broker.terminate()
    if stats:
        with mu:
            stats.flush()
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, finish)
    threading.Timer(LIFETIME, finish).start()
    for sid in range(16):
        shard(sid, 1024, 64)
    for _ in range(CONSUMERS):
        threading.Thread(target=consume, daemon=True).start()
    if READY:
        open(READY, "w").close()
    while True:
        time.sleep(1)
