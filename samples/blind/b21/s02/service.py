"""Review scoring consumer: reads JSON records on stdin, featurises them and scores them with a small model."""
import json
import multiprocessing as mp
import os
import sys
import threading
import time
import zlib

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
PARSERS = int(os.environ.get("SVC_PARSERS", "1"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s02-records.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s02-ready")
DIM = 512
PUNCT = str.maketrans({c: " " for c in ",.;:!?()[]{}\"'-/"})


def featurise(rec):
    vec = [0.0] * DIM
    text = rec["text"].lower().translate(PUNCT)
    words = [w for w in text.split() if w]
    for w in words:
        padded = "<" + w + ">"
        for n in (3, 4, 5):
            for i in range(len(padded) - n + 1):
                h = zlib.crc32(padded[i:i + n].encode())
                vec[h % DIM] += 1.0 if (h >> 16) & 1 else -1.0
    for a, b in zip(words, words[1:]):
        h = zlib.crc32((a + " " + b).encode())
        vec[h % DIM] += 0.5
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    vec = [v / norm for v in vec]
    vec[0] = rec["rating"] / 5.0
    vec[1] = min(rec["helpful"], 100) / 100.0
    return vec


def parse_worker(inq, outq):
    while True:
        item = inq.get()
        if item is None:
            break
        t_in, line = item
        rec = json.loads(line)
        outq.put((t_in, featurise(rec)))


def model_worker(outq, ready_evt):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(DIM, 128), torch.nn.ReLU(), torch.nn.Linear(128, 3)).eval()
    ready_evt.set()
    f = open(STATS, "a", buffering=1 << 16)
    last = time.time()
    while True:
        batch = [outq.get()]
        while len(batch) < 32:
            try:
                batch.append(outq.get_nowait())
            except Exception:
                break
        with torch.no_grad():
            x = torch.tensor([v for _, v in batch], dtype=torch.float32)
            model(x).argmax(1)
        now = time.time()
        for t_in, _ in batch:
            f.write(f"{now:.4f} {(now - t_in) * 1000:.3f} ok\n")
        if now - last > 0.3:
            f.flush()
            last = now


def main():
    inq = mp.Queue(maxsize=64)
    outq = mp.Queue(maxsize=256)
    ready_evt = mp.Event()
    procs = [mp.Process(target=parse_worker, args=(inq, outq), daemon=True) for _ in range(PARSERS)]
    procs.append(mp.Process(target=model_worker, args=(outq, ready_evt), daemon=True))
    for p in procs:
        p.start()
    ready_evt.wait(60)
    open(READY, "w").close()

    def reader():
        for line in sys.stdin:
            inq.put((time.time(), line))

    threading.Thread(target=reader, daemon=True).start()
    time.sleep(LIFETIME)
    for p in procs:
        p.terminate()
    os._exit(0)


if __name__ == "__main__":
    mp.set_start_method("fork")
    main()
