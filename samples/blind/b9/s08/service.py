import os
import random
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
import multiprocessing as mp

STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
LIFETIME = float(os.environ.get("SVC_LIFETIME", "600"))
POOL = os.environ.get("SVC_POOL", "thread")
IN_FLIGHT = 8

VOCAB = [f"tok{i}" for i in range(8000)]
MERGES = {VOCAB[i]: VOCAB[i][:3] + "_" + str(i % 97) for i in range(0, 8000, 3)}


def rescore(seed):
    """Rescore and detokenise 24 beam hypotheses of a generated sequence."""
    rnd = random.Random(seed)
    best, best_score = None, float("-inf")
    for _beam in range(24):
        toks = [rnd.randrange(8000) for _ in range(160)]
        seen = {}
        score = 0.0
        for i, t in enumerate(toks):
            w = VOCAB[t]
            w = MERGES.get(w, w)
            c = seen.get(w, 0)
            score += -0.01 * i / (1 + c) - 0.3 * c
            seen[w] = c + 1
            for n in (2, 3):
                if i >= n:
                    g = tuple(toks[i - n:i + 1])
                    seen[g] = seen.get(g, 0) + 1
        text = " ".join(MERGES.get(VOCAB[t], VOCAB[t]) for t in toks).replace(" _", "")
        if score > best_score:
            best, best_score = text, score
    return len(best), best_score


def main():
    if POOL == "process":
        ex = ProcessPoolExecutor(2, mp_context=mp.get_context("fork"))
    else:
        ex = ThreadPoolExecutor(IN_FLIGHT)
    ex.submit(rescore, 0).result()
    stats = open(STATS, "a", buffering=1 << 16)
    slock = threading.Lock()
    stop = time.time() + LIFETIME
    last = [time.time()]

    def client(cid):
        n = 0
        while time.time() < stop:
            t0 = time.time()
            ex.submit(rescore, (cid << 20) | n).result()
            n += 1
            t1 = time.time()
            with slock:
                stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
                if t1 - last[0] > 0.3:
                    stats.flush()
                    last[0] = t1

    for c in range(IN_FLIGHT):
        threading.Thread(target=client, args=(c,), daemon=True).start()
    if READY:
        open(READY, "w").close()
    while time.time() < stop:
        time.sleep(0.5)
    os._exit(0)


if __name__ == "__main__":
    main()
