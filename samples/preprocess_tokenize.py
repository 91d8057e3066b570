"""preprocess (serial): one thread tokenises every request in Python; the model waits.

A two-stage pipeline, as many text services are built: a single preprocessing thread
normalises and tokenises each request (lower-casing, splitting, a vocabulary lookup,
padding: all Python) and hands token ids through a bounded queue to two model workers,
which run a small NumPy model on batches of up to 8 requests (GIL released inside). The
model workers mostly wait for work: the one tokeniser thread sets the throughput.

Expected verdict: preprocess (serial). The fix diagnose should give: move tokenisation to
a process pool (or give the stage 2-3 workers), or use a native batch tokenizer.
"""

import queue
import threading

import numpy as np
from _harness import parse_args, serve

WORDS = [f"w{i:04d}" for i in range(4000)]
VOCAB = {w: i for i, w in enumerate(WORDS)}
RNG = np.random.default_rng(0)
TEXTS = [
    " ".join(WORDS[j].upper() if j % 7 == 0 else WORDS[j] for j in RNG.integers(0, 4000, 400)) + "."
    for _ in range(32)
]
EMBED = RNG.standard_normal((4000, 128)).astype(np.float32)
W = RNG.standard_normal((128, 128)).astype(np.float32)
MAX_LEN = 512


def normalise(text):
    out = []
    for ch in text:
        out.append(ch.lower() if ch.isalnum() or ch == " " else " ")
    return "".join(out)


def tokenize(text):
    ids = [VOCAB.get(tok, 0) for tok in normalise(text).split()]
    ids = ids[:MAX_LEN] + [0] * max(0, MAX_LEN - len(ids))
    return ids


def model_worker(q, stop):
    while not stop.is_set():
        try:
            batch = [q.get(timeout=0.2)]
        except queue.Empty:
            continue
        while len(batch) < 8:
            try:
                batch.append(q.get_nowait())
            except queue.Empty:
                break
        ids = np.array(batch, dtype=np.int64)
        EMBED[ids].mean(axis=1) @ W  # the "model": the GIL is released in the matmul


if __name__ == "__main__":
    args = parse_args(__doc__, threads=1)
    q = queue.Queue(maxsize=64)
    stop = threading.Event()
    for i in range(2):
        threading.Thread(
            target=model_worker, args=(q, stop), name=f"model-{i}", daemon=True
        ).start()
    counter = [0]

    def handle():
        counter[0] += 1
        q.put(tokenize(TEXTS[counter[0] % len(TEXTS)]))

    try:
        serve(
            "preprocess_tokenize",
            handle,
            args.threads,
            args.seconds,
            args.quiet,
            thread_name="preprocess",
        )
    finally:
        stop.set()
