"""preprocess (serial): one thread tokenises every request in Python; the model waits.

A two-stage pipeline, as many text services are built: a single preprocessing thread
normalises and tokenises each request (lower-casing, splitting, a vocabulary lookup,
padding: all Python) and hands token ids through a bounded queue to two model workers,
which run a small NumPy model on batches of up to 8 requests (GIL released inside). The
model workers mostly wait for work: the one tokeniser thread sets the throughput.

Expected verdict: preprocess, serial or gil: the one thread is saturated and holds the GIL
the model workers wait for. The fix diagnose should give: cheaper tokenisation (a native
batch tokenizer, C-level string calls: ``--fast`` gains 2.55x) or a process pool; not a
second tokeniser thread (``--threads 2``: 0.86x, it queues on the GIL). samples/README.md
has the figures.
"""

import queue
import threading

import numpy as np
from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("preprocess/serial", "preprocess/gil")

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


#: every character that is neither a letter, a digit nor a space, mapped to a space
_NOT_WORD = {c: " " for c in range(0x250) if not (chr(c).isalnum() or c == 0x20)}


def normalise_fast(text):
    """What normalise() returns for this sample's (ASCII) texts, in two C-level calls instead
    of a loop per character (the counterfactual: ``--fast``)."""
    return text.lower().translate(_NOT_WORD)


def tokenize(text, normalise=normalise):
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
    args = parse_args(
        __doc__,
        threads=1,
        extra=lambda p: p.add_argument(
            "--fast", action="store_true", help="normalise in C-level calls (the counterfactual)"
        ),
    )
    norm = normalise_fast if args.fast else normalise
    q = queue.Queue(maxsize=64)
    stop = threading.Event()
    for i in range(2):
        threading.Thread(
            target=model_worker, args=(q, stop), name=f"model-{i}", daemon=True
        ).start()
    counter = [0]

    def handle():
        counter[0] += 1
        q.put(tokenize(TEXTS[counter[0] % len(TEXTS)], norm))

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
