"""Where ``diagnose watch``'s memory goes, capture by capture: its anonymous memory, the
Python objects it holds (tracemalloc, with ``--tracemalloc``), its threads and descriptors,
after each cycle of a watch run in this process on samples/io_wait.py.

Python memory flat while anonymous memory grows is the allocators' (glibc's arenas, the
jemalloc of pyarrow) settling, not objects kept; the rate per capture over the last third
of the run is the figure that matters for a week of captures. Usage (as root, repository
root, alone on the host)::

    python -m benchmarks watch-memory --count 70 --every 3 --capture 2 [--tracemalloc]
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
    args = ap.parse_args(argv)
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(1)
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
        }
        if args.tracemalloc:
            row["python_kib"] = round(tracemalloc.get_traced_memory()[0] / 1024, 1)
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
    print(f"rows: {out}")


if __name__ == "__main__":
    main()
