import os, threading, time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

DTYPE = np.dtype(os.environ.get("SVC_DTYPE", "float64"))
N_ITEMS = int(os.environ.get("SVC_ITEMS", "131072"))
DIM = 256
CLIENTS = int(os.environ.get("SVC_CLIENTS", "2"))


class Retriever:
    def __init__(self):
        rng = np.random.default_rng(11)
        self.emb = np.empty((N_ITEMS, DIM), dtype=DTYPE)
        for i in range(0, N_ITEMS, 16384):
            self.emb[i:i + 16384] = rng.standard_normal((min(16384, N_ITEMS - i), DIM))
        self.bias = rng.standard_normal(N_ITEMS).astype(DTYPE) * 0.01

    def topk(self, q, k=20):
        s = self.emb @ q.astype(DTYPE)
        s += self.bias
        idx = np.argpartition(s, -k)[-k:]
        return idx[np.argsort(-s[idx])]


def main():
    model = Retriever()
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1)
    lifetime = float(os.environ.get("SVC_LIFETIME", "600"))
    stop = time.time() + lifetime
    model.topk(np.ones(DIM))

    def client(i):
        rng = np.random.default_rng(100 + i)
        while time.time() < stop:
            q = rng.standard_normal(DIM)
            t0 = time.time()
            model.topk(q)
            t1 = time.time()
            stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")

    open(os.environ.get("SVC_READY_PATH", os.devnull), "w").close()
    for i in range(CLIENTS):
        threading.Thread(target=client, args=(i,), daemon=True).start()
    time.sleep(lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
