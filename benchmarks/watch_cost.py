"""What ``diagnose watch`` costs, averaged over its cycles, projected to its default duty
cycle (a 10 s capture every 10 minutes).

On one running sample service, ``diagnose watch PID --capture C --every C --count N`` runs
twice, with N = 1 and N = ``--count``, each to completion, and the CPU time of its whole
process tree (diagnose, py-spy, perf; common.run_timed) is read. The difference divided by
the extra captures is one cycle's CPU without the interpreter's start-up: a capture, its
analysis, its report.json (and the page of a capture whose verdict changed), the store's
index and retention. Over the default period that is ``cycle CPU / 600 s`` cores on
average. ``--every`` equal to ``--capture`` runs the cycles back to back, so the benchmark
takes minutes, not hours; the cost of a cycle does not depend on the wait between cycles.
Usage (as root, repository root, alone on the host)::

    python -m benchmarks watch-cost --reps 2 --count 4 --capture 10

``--variants ';--sched-events 30000'`` compares watch options side by side: each rep runs
every variant in turn on the same service (an empty variant: the defaults).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DIAGNOSE,
    ROOT,
    append_row,
    machine_line,
    results_file,
    run_timed,
    sample_argv,
    stat,
)

DEFAULT_PERIOD_S = 600.0


def _watch(pid: int, capture: float, count: int, store: Path, extra: list[str]) -> dict[str, Any]:
    argv = [*DIAGNOSE, "watch", str(pid), "--capture", f"{capture:g}s", "--every",
            f"{capture:g}s", "--count", str(count), "--store", str(store), *extra]  # fmt: skip
    rc, wall, cpu, rss = run_timed(argv, timeout=count * (capture + 60) + 60)
    with sqlite3.connect(store / "index.sqlite") as db:
        kept = [r[0] for r in db.execute("SELECT kept_whole FROM captures ORDER BY id")]
    return {"rc": rc, "wall_s": round(wall, 2), "cpu_s": round(cpu, 3), "maxrss_kib": rss,
            "captures": len(kept), "kept_whole": sum(kept)}  # fmt: skip


def one_rep(
    sample: str, args: list[str], capture: float, count: int, extra: list[str]
) -> dict[str, Any]:
    proc = subprocess.Popen(
        sample_argv(sample, [*args, "--seconds", str(count * (capture + 60) + 120)]),
        cwd=ROOT / "samples",
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(2.0)
        with tempfile.TemporaryDirectory() as tmp:
            short = _watch(proc.pid, capture, 1, Path(tmp) / "one", extra)
            long = _watch(proc.pid, capture, count, Path(tmp) / "many", extra)
    finally:
        proc.kill()
        proc.wait()
    more = long["captures"] - short["captures"]
    cycle_cpu = (long["cpu_s"] - short["cpu_s"]) / more
    return {
        "sample": sample,
        "variant": " ".join(extra),
        "capture_s": capture,
        "count": count,
        "one": short,
        "many": long,
        "cycle_cpu_s": round(cycle_cpu, 3),
        "cycle_wall_s": round((long["wall_s"] - short["wall_s"]) / more, 2),
        "default_duty_cores": round(cycle_cpu / DEFAULT_PERIOD_S, 5),
    }


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks watch-cost")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--count", type=int, default=4, help="captures of the longer watch")
    ap.add_argument("--capture", type=float, default=10.0, help="seconds per capture")
    ap.add_argument("--sample", default="lock_contention")
    ap.add_argument("--threads", default="4")
    ap.add_argument("--variants", default="", help="';'-separated watch options, side by side")
    args = ap.parse_args(argv)
    print(machine_line())
    out = results_file("watch-cost")
    variants = [v.split() for v in args.variants.split(";")]
    rows: list[dict[str, Any]] = []
    for rep in range(args.reps):
        for extra in variants:
            row = one_rep(args.sample, ["--threads", args.threads], args.capture, args.count, extra)
            row["rep"] = rep
            append_row(out, row)
            print(json.dumps(row))
            rows.append(row)
    print(f"\nraw rows: {out}\n")
    print(
        "| variant | capture | CPU per cycle (s) | wall per cycle (s) | average cores at 10 s / 10 min |"
    )
    print("|---|---|---|---|---|")
    for extra in variants:
        mine = [r for r in rows if r["variant"] == " ".join(extra)]
        cpu = stat([r["cycle_cpu_s"] for r in mine])
        wall = stat([r["cycle_wall_s"] for r in mine])
        cores = stat([r["default_duty_cores"] for r in mine])
        print(
            f"| {' '.join(extra) or 'defaults'} | {args.capture:g} s, {args.sample} --threads "
            f"{args.threads} | {cpu.fmt('.2f')} | {wall.fmt('.1f')} | {cores.fmt('.4f')} |"
        )
