import json, os, socket, subprocess, sys, threading, time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

BROKER_PORT = int(os.environ.get("SVC_BROKER_PORT", "18691"))
REUSE = os.environ.get("SVC_BUFFERS", "fresh") == "reuse"
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
ROWS, COLS = 3072, 2048

broker = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "broker.py"),
                           str(BROKER_PORT)])
rng = np.random.default_rng(3)
BASE = rng.standard_normal((2 * ROWS, COLS))
BIAS = rng.standard_normal(COLS)


class Normalizer:
    def __init__(self):
        self.bufs = [np.empty((ROWS, COLS)) for _ in range(2)] if REUSE else None

    def run(self, offset, scale):
        x = BASE[offset:offset + ROWS]
        if self.bufs is None:
            a = x * scale
            b = a + BIAS
            c = np.abs(b)
            d = np.sqrt(c)
        else:
            a, b = self.bufs
            np.multiply(x, scale, out=a)
            np.add(a, BIAS, out=b)
            np.abs(b, out=a)
            np.sqrt(a, out=b)
            d = b
        return d.mean(axis=0)


def connect():
    for _ in range(100):
        try:
            return socket.create_connection(("127.0.0.1", BROKER_PORT))
        except OSError:
            time.sleep(0.1)
    raise SystemExit("broker not reachable")


def worker(stats, stop):
    norm = Normalizer()
    f = connect().makefile("rwb")
    while time.time() < stop:
        f.write(b"NEXT\n"); f.flush()
        job = json.loads(f.readline())
        feats = norm.run(job["offset"], job["scale"])
        now = time.time()
        f.write(f"DONE {job['id']} {float(feats[0]):.5f}\n".encode()); f.flush()
        stats.write(f"{now:.4f} {(now - job['ts']) * 1000:.3f} ok\n")


def main():
    lifetime = float(os.environ.get("SVC_LIFETIME", "600"))
    stop = time.time() + lifetime
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1)
    connect().close()
    open(os.environ.get("SVC_READY_PATH", os.devnull), "w").close()
    for _ in range(WORKERS):
        threading.Thread(target=worker, args=(stats, stop), daemon=True).start()
    time.sleep(lifetime)
    broker.kill()
    os._exit(0)


if __name__ == "__main__":
    main()
