"""The loop every sample runs: N request threads for a fixed time, then a JSON line of stats.

Samples are small, self-terminating stand-ins for inference services, each with one known
bottleneck (see samples/README.md). They print, on exit, one JSON line on stdout:
{"sample": ..., "requests": ..., "seconds": ..., "rps": ..., "p50_ms": ..., "p99_ms": ..., "mean_ms": ...}
which the benchmarks use to measure what diagnose costs the target. With ``--timestamps PATH``
the end time of every request (``time.monotonic()``, one per line) is also written to PATH
on exit, so a benchmark can count the requests served inside any window (a profiler's).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time

_timestamps_path = None  # set by parse_args from --timestamps


def parse_args(description, threads=8, seconds=60.0, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--threads", type=int, default=threads, help="request threads")
    p.add_argument("--seconds", type=float, default=seconds, help="run time, then exit")
    p.add_argument("--quiet", action="store_true", help="do not print the stats line")
    p.add_argument(
        "--timestamps",
        metavar="PATH",
        help="on exit, write each request's end time (time.monotonic()) to PATH, one per line",
    )
    p.add_argument(
        "--idle-threads",
        type=int,
        default=0,
        help="also start this many threads that only wait (a server's idle pool): what a "
        "profiler costs grows with threads it reads, busy or not",
    )
    if extra:
        extra(p)
    args = p.parse_args()
    global _timestamps_path
    _timestamps_path = args.timestamps
    _start_idle_threads(args.idle_threads)
    return args


_idle_forever = threading.Event()


def _start_idle_threads(n):
    for i in range(n):
        threading.Thread(target=_idle_forever.wait, name=f"idle-{i}", daemon=True).start()


def serve(
    name, handler, threads, seconds, quiet=False, thread_name="handler", setup=None, pace=None
):
    """Run ``handler()`` in a loop in ``threads`` threads for ``seconds``; print stats.

    With ``setup``, each thread first calls ``state = setup(i)`` (its own model, session or
    connection) and then ``handler(state)`` per request. With ``pace`` (seconds), each thread
    starts a request at most every ``pace`` seconds and sleeps in between (light traffic).
    """
    stop = threading.Event()
    latencies = []
    ends = []  # time.monotonic() at the end of each request, for --timestamps
    lock = threading.Lock()
    counts = [0]

    def worker(i):
        local = []
        local_ends = []
        state = setup(i) if setup is not None else None
        call = (lambda: handler(state)) if setup is not None else handler
        while not stop.is_set():
            t0 = time.perf_counter()
            call()
            local.append(time.perf_counter() - t0)
            local_ends.append(time.monotonic())
            if pace:
                stop.wait(max(0.0, pace - (time.perf_counter() - t0)))
            if len(local) >= 64:
                with lock:
                    latencies.extend(local)
                    ends.extend(local_ends)
                    counts[0] += len(local)
                local = []
                local_ends = []
        with lock:
            latencies.extend(local)
            ends.extend(local_ends)
            counts[0] += len(local)

    def on_term(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    start = time.perf_counter()
    ts = [
        threading.Thread(target=worker, args=(i,), name=f"{thread_name}-{i}", daemon=True)
        for i in range(threads)
    ]
    for t in ts:
        t.start()
    try:
        stop.wait(seconds)
    except KeyboardInterrupt:
        pass
    stop.set()
    for t in ts:
        t.join(10)
    elapsed = time.perf_counter() - start
    lat = sorted(latencies)

    def pct(q):
        return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 3) if lat else None

    stats = {
        "sample": name,
        "threads": threads,
        "requests": len(lat),
        "seconds": round(elapsed, 3),
        "rps": round(len(lat) / elapsed, 2) if elapsed > 0 else 0.0,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "mean_ms": round(sum(lat) / len(lat) * 1000, 3) if lat else None,
    }
    if _timestamps_path:
        with open(_timestamps_path, "w") as f:
            f.write("".join(f"{t:.6f}\n" for t in sorted(ends)))
    if not quiet:
        sys.stdout.write(json.dumps(stats) + "\n")
        sys.stdout.flush()
    return stats
