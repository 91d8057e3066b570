import json, os, queue, threading, time
import multiprocessing as mp

N_WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
N_SV = int(os.environ.get("SVC_SUPPORT", "24000"))
CLIENTS = int(os.environ.get("SVC_CLIENTS", "6"))
DIM = 96


def worker(jobs, results, n_sv):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    import numpy as np
    rng = np.random.default_rng(42)
    sv = rng.standard_normal((n_sv, DIM))
    alpha = rng.standard_normal(n_sv)
    sv_sq = (sv * sv).sum(1)
    gamma = 1.0 / DIM
    while True:
        job = jobs.get()
        if job is None:
            return
        jid, seed = job
        q = np.random.default_rng(seed).standard_normal((16, DIM))
        d2 = (q * q).sum(1)[:, None] + sv_sq[None, :] - 2.0 * (q @ sv.T)
        k = np.exp(-gamma * d2) + np.power(q @ sv.T / DIM + 1.0, 3)
        results.put((jid, (k @ alpha).tolist()))


def main():
    ctx = mp.get_context("fork")
    jobs, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(jobs, results, N_SV), daemon=True) for _ in range(N_WORKERS)]
    for p in procs:
        p.start()
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1)
    lifetime = float(os.environ.get("SVC_LIFETIME", "600"))
    pending, lock = {}, threading.Lock()
    warm = threading.Semaphore(0)
    slots = [threading.Event() for _ in range(CLIENTS)]
    stop = time.time() + lifetime

    def client(i):
        n = 0
        while time.time() < stop:
            jid = i * 10**7 + n; n += 1
            ev = slots[i]; ev.clear()
            with lock:
                pending[jid] = (time.time(), ev)
            jobs.put((jid, jid))
            ev.wait()

    def collector():
        while True:
            jid, _scores = results.get()
            with lock:
                item = pending.pop(jid, None)
            if item is None:
                warm.release()
                continue
            t0, ev = item
            now = time.time()
            stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
            ev.set()

    threading.Thread(target=collector, daemon=True).start()
    # workers ready when one warm-up job per worker completes
    for i in range(N_WORKERS):
        jobs.put((-1 - i, 0))
    for i in range(N_WORKERS):
        warm.acquire()
    open(os.environ.get("SVC_READY_PATH", os.devnull), "w").close()
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
