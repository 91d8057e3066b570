"""Where ``diagnose watch``'s memory goes, capture by capture: its anonymous memory, the
Python objects it holds (tracemalloc, with ``--tracemalloc``), its threads and descriptors,
after each cycle of a watch run in this process on samples/io_wait.py.

Python memory flat while anonymous memory grows is the allocators' (glibc's arenas, the
jemalloc of pyarrow) settling, not objects kept; the rate per capture over the last third
of the run is the figure that matters for a week of captures. Usage (as root, repository
root, alone on the host)::

    python -m benchmarks watch-memory --count 70 --every 3 --capture 2 [--tracemalloc]
        [--growth-top 15]

``--growth-top N`` (with --tracemalloc) prints the N call sites whose live Python memory
grew most between the end of the first third and the end of the run (8 frames each).
tracemalloc can hang a capture: subprocess runs diagnose's pre-exec setup in Python in the
forked child, and a tracemalloc lock another thread held at the fork is never released
there (seen once in 83 captures). The ``blocks`` column (``sys.getallocatedblocks()``)
follows the Python objects without it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, append_row, machine_line, results_file
from diagnose.app.watch import Stored, Target, WatchPlan, watch
from diagnose.collect.base import CaptureOptions


def _anon_kib() -> int:
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    return 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks watch-memory")
    ap.add_argument("--count", type=int, default=70)
    ap.add_argument("--every", type=float, default=3.0)
    ap.add_argument("--capture", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=8, help="the io_wait sample's threads")
    ap.add_argument("--tracemalloc", action="store_true", help="also trace Python objects")
    ap.add_argument("--growth-top", type=int, default=0, help="sites that grew most (tracemalloc)")
    args = ap.parse_args(argv)
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(8 if args.growth_top else 1)
    snapshots: list[Any] = []
    print(machine_line())
    target = subprocess.Popen(
        [sys.executable, str(ROOT / "samples" / "io_wait.py"), "--threads", str(args.threads),
         "--seconds", str(int(args.count * (args.every + args.capture) + 600)), "--quiet"],
    )  # fmt: skip
    rows: list[dict[str, Any]] = []

    def on_stored(s: Stored) -> None:
        gc.collect()
        row: dict[str, Any] = {
            "capture": len(rows) + 1,
            "stored": s.row is not None,
            "anon_kib": _anon_kib(),
            "threads": len(os.listdir("/proc/self/task")),
            "fds": len(os.listdir("/proc/self/fd")),
            # the interpreter's live object blocks: Python memory without tracemalloc's hooks
            "blocks": sys.getallocatedblocks(),
        }
        if args.tracemalloc:
            row["python_kib"] = round(tracemalloc.get_traced_memory()[0] / 1024, 1)
            if args.growth_top and len(rows) + 1 in (max(2, args.count // 3), args.count):
                snapshots.append(tracemalloc.take_snapshot())
        rows.append(row)
        print(json.dumps(row), flush=True)

    plan = WatchPlan(
        every_s=args.every,
        options=CaptureOptions(duration=args.capture),
        keep_s=7 * 86400,
        max_store_bytes=2**30,
        count=args.count,
    )
    try:
        time.sleep(3)
        with tempfile.TemporaryDirectory(prefix="diagnose-watch-memory-") as tmp:
            watch(plan, Path(tmp) / "store", Target(pid=target.pid), on_stored=on_stored)
    finally:
        target.kill()
        target.wait()
    out = results_file("watch_memory")
    for row in rows:
        append_row(out, row)
    third = max(1, len(rows) // 3)
    late = rows[-third:]
    print("\n| captures | anonymous MiB (first, last) | MiB a capture, last third |"
          + (" Python MiB (first, last) |" if args.tracemalloc else ""))  # fmt: skip
    print("|---|---|---|" + ("---|" if args.tracemalloc else ""))
    rate = (late[-1]["anon_kib"] - late[0]["anon_kib"]) / 1024 / max(1, len(late) - 1)
    line = (
        f"| {len(rows)} | {rows[0]['anon_kib'] / 1024:.1f}, {rows[-1]['anon_kib'] / 1024:.1f} "
        f"| {rate:.3f} |"
    )
    if args.tracemalloc:
        line += f" {rows[0]['python_kib'] / 1024:.2f}, {rows[-1]['python_kib'] / 1024:.2f} |"
    print(line)
    if len(snapshots) == 2:
        _growth(snapshots[0], snapshots[1], args.growth_top, args.count - max(2, args.count // 3))
    print(f"rows: {out}")


def _growth(first: Any, last: Any, top: int, captures: int) -> None:
    """The call sites whose live memory grew most between two tracemalloc snapshots."""
    import tracemalloc

    keep = [tracemalloc.Filter(False, tracemalloc.__file__)]
    stats = last.filter_traces(keep).compare_to(first.filter_traces(keep), "traceback")
    print(f"\nPython memory grown over the last {captures} captures, by call site:")
    for st in stats[:top]:
        if st.size_diff <= 0:
            continue
        print(f"\n+{st.size_diff / 1024:.1f} KiB ({st.count_diff:+d} blocks)")
        for line in st.traceback.format()[-16:]:
            print("   " + line)


if __name__ == "__main__":
    main()
