"""A self-loaded pipeline of processes that listens on nothing: the parent keeps INFLIGHT
log lines in flight to PARSERS processes, which turn each into a feature vector in plain
Python and put it on a queue that one model process reads, in batches, into a torch MLP
(one intra-op thread); the parent collects the scores.

    python feed_process.py PARSERS SECONDS [INFLIGHT] [torch|numpy]

prints "ready" once the first line is scored, then one JSON line with lines/s at exit.
With one parser, the parsing is the pipeline's slowest stage; the model process waits on
its queue. With ``numpy`` the last process scores each vector with one NumPy dot
(0.01 cores): no model call can be seen downstream. No function here says what it does to the data (a user's names decide nothing)."""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
import sys
import time
import zlib

from mpqueue import next_item, start_pipeline

DIM = 256


def step(line: str) -> list[float]:
    vec = [0.0] * DIM
    for kv in line.split("&"):
        k, _, v = kv.partition("=")
        h = zlib.crc32(k.encode()) % DIM
        vec[h] += 1.0
        for i, ch in enumerate(v):
            vec[(h + i * 31 + ord(ch)) % DIM] += 0.25
    return vec


def stage(lines: mp.Queue, rows: mp.Queue, parent: int) -> None:
    while (item := next_item(lines, parent)) is not None:
        rid, line = item  # type: ignore[misc]
        rows.put((rid, step(line)))


def ranker(rows: mp.Queue, done: mp.Queue, parent: int) -> None:
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(DIM, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
        torch.nn.ReLU(), torch.nn.Linear(1024, 1),
    ).eval()  # fmt: skip
    while (first := next_item(rows, parent)) is not None:
        batch = [first]
        while len(batch) < 8:
            try:
                batch.append(rows.get_nowait())
            except queue.Empty:
                break
        with torch.inference_mode():
            out = net(torch.tensor([b[1] for b in batch])).squeeze(1).tolist()  # type: ignore[index]
        for (rid, _), s in zip(batch, out, strict=True):  # type: ignore[misc]
            done.put((rid, s))


def projector(rows: mp.Queue, done: mp.Queue, parent: int) -> None:
    import numpy as np

    weights = np.random.default_rng(0).standard_normal(DIM)
    while (item := next_item(rows, parent)) is not None:
        rid, vec = item  # type: ignore[misc]
        done.put((rid, float(np.asarray(vec) @ weights)))


def main(parsers: int, seconds: float, inflight: int, last: str = "torch") -> None:
    lines_out = [
        "&".join(f"k{(i * 7 + j) % 300}=v{(i * 13 + j * 17) % 9973}x{j}" for j in range(1000))
        for i in range(16)
    ]
    lines, _rows, done = start_pipeline(stage, parsers, projector if last == "numpy" else ranker)
    for rid in range(inflight):
        lines.put((rid, lines_out[rid % 16]))
    end, ready, n, rid = time.monotonic() + seconds, False, 0, inflight
    start = time.monotonic()
    while time.monotonic() < end:
        try:
            done.get(timeout=1.0)
        except queue.Empty:
            continue
        if not ready:
            print("ready", flush=True)
            ready, start, n = True, time.monotonic(), 0
        n += 1
        lines.put((rid, lines_out[rid % 16]))
        rid += 1
    print(json.dumps({"lines_per_s": round(n / max(1e-9, time.monotonic() - start), 1)}))


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]), float(args[1]), int(args[2]) if len(args) > 2 else 24, *args[3:4])
