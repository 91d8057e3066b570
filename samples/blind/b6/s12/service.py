"""Cohort analysis worker (no port): pulls jobs from the local broker over a socket, gathers the cohort's
embeddings from an in-memory store, extracts principal directions and reports explained variance."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

BROKER_PORT = int(os.environ.get("BROKER_PORT", "18462"))
PCA = os.environ.get("SVC_PCA", "svd")
here = os.path.dirname(os.path.abspath(__file__))
broker = subprocess.Popen([sys.executable, os.path.join(here, "broker.py")], env=dict(os.environ))


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    broker.kill()
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


threading.Thread(target=_lifetime, daemon=True).start()

rng = np.random.default_rng(0)
STORE = rng.standard_normal((50000, 256)) @ (np.eye(256) + 0.05 * rng.standard_normal((256, 256)))
TAG_W = {"vip": 2.0, "churn": 1.5, "promo": 0.5}


def components(Xc, k):
    if PCA == "svd":
        _, s, vt = np.linalg.svd(Xc, full_matrices=False)
        return (s[:k] ** 2) / (len(Xc) - 1), vt[:k]
    w, v = np.linalg.eigh(Xc.T @ Xc / (len(Xc) - 1))
    order = np.argsort(w)[::-1][:k]
    return w[order], v[:, order].T


def analyse(job):
    ids, wts = [], []
    for m in job["cohort"]:
        w = m["w"]
        for t in m["tags"]:
            w *= TAG_W.get(t, 1.0)
        ids.append(m["uid"])
        wts.append(w)
    X = STORE[ids] * np.sqrt(np.asarray(wts))[:, None]
    Xc = X - X.mean(axis=0)
    var, comps = components(Xc, 16)
    total = float((Xc ** 2).sum() / (len(Xc) - 1))
    return {"id": job["id"], "explained": (var / total).round(5).tolist(), "centroid_proj": (comps @ X.mean(0)).round(4).tolist()}


def connect():
    for _ in range(200):
        try:
            return socket.create_connection(("127.0.0.1", BROKER_PORT))
        except OSError:
            time.sleep(0.05)
    raise SystemExit("broker not reachable")


def main():
    sock = connect()
    rf = sock.makefile("rb")
    stats = open(os.environ["SVC_STATS_PATH"], "a", buffering=1)
    open(os.environ["SVC_READY_PATH"], "w").close()
    while True:
        sock.sendall(b"NEXT\n")
        job = json.loads(rf.readline())
        analyse(job)
        now = time.time()
        stats.write(f"{now:.4f} {(now - job['ts']) * 1000:.3f} ok\n")


if __name__ == "__main__":
    main()
