"""Review classifier consumer: reads JSON records from stdin, hashes text features, scores them in a worker pool."""
import json
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
FEATURES_IN = os.environ.get("SVC_FEATURES_IN", "reader")  # reader | workers
WORKERS = int(os.environ.get("SVC_WORKERS", "2"))
NBUCKETS = 1 << 12
CHUNK = 16

_W = None


def featurize(text):
    idx = []
    words = text.lower().split()
    for w in words:
        padded = f"<{w.strip('.,;:!?')}>"
        for n in (2, 3, 4, 5):
            for i in range(len(padded) - n + 1):
                idx.append(hash(padded[i:i + n]) % NBUCKETS)
    for a, b in zip(words, words[1:]):
        idx.append(hash(a + " " + b) % NBUCKETS)
    return idx


def _init():
    global _W
    _W = np.random.default_rng(0).normal(size=(NBUCKETS, 8)).astype(np.float32)


def score(idx):
    v = np.bincount(np.asarray(idx, dtype=np.int64), minlength=NBUCKETS).astype(np.float32)
    logits = v @ _W
    return int(logits.argmax())


def score_many(feature_lists):
    return [score(idx) for idx in feature_lists]


def score_lines(lines):
    return [score(featurize(json.loads(line)["text"])) for line in lines]


def main():
    stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1 << 16)
    pool = mp.get_context("fork").Pool(WORKERS, initializer=_init)
    inflight = threading.BoundedSemaphore(8)
    lock = threading.Lock()
    last = [time.time()]

    def done(starts):
        def cb(_res):
            now = time.time()
            with lock:
                for t0 in starts:
                    stats.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
                if now - last[0] > 0.3:
                    stats.flush()
                    last[0] = now
            inflight.release()
        return cb

    def stop_later():
        time.sleep(LIFETIME)
        stats.flush()
        pool.terminate()
        os._exit(0)

    threading.Thread(target=stop_later, daemon=True).start()
    ready = os.environ.get("SVC_READY_PATH")
    if ready:
        open(ready, "w").close()
    starts, items = [], []
    for line in sys.stdin:
        starts.append(time.time())
        if FEATURES_IN == "workers":
            items.append(line)
        else:
            items.append(featurize(json.loads(line)["text"]))
        if len(items) < CHUNK:
            continue
        inflight.acquire()
        fn = score_lines if FEATURES_IN == "workers" else score_many
        pool.apply_async(fn, (items,), callback=done(starts))
        starts, items = [], []
    pool.close()
    pool.join()


if __name__ == "__main__":
    main()
