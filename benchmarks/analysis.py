"""How long ``diagnose report`` takes, and how much memory, on bundles of growing size.

Bundles come from real recordings of a sample service (``lock_contention.py --threads N``
under ``diagnose attach`` at its defaults: 100 Hz stacks, 20 Hz /proc, perf and scheduler
tracing) and, for the largest sizes, from :mod:`benchmarks.scale_bundle`, which repeats a
real recording in time (and, for one check, copies its threads). The table says which
bundles are generated and from what.

Each bundle is reported ``--reps`` times (``diagnose report BUNDLE -o DIR``: analysis,
verdict, HTML, Markdown and JSON), one run at a time; the figures are the median wall
time and the median peak RSS of the process (``wait4``), with their ranges. *Samples* are
the rows of every table the analysis reads (/proc ticks x threads, py-spy intervals, perf
samples, off-CPU and futex events); the cost is fitted as a straight line in them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from benchmarks.common import (
    DIAGNOSE,
    RESULTS,
    Service,
    append_row,
    linear_fit,
    loadavg,
    machine_line,
    results_file,
    run_timed,
    stat,
)
from benchmarks.scale_bundle import TABLES, scale

BUNDLES = RESULTS / "bundles"
#: recorded: (threads, seconds)
REAL = [(8, 10), (8, 60), (64, 10), (64, 60), (256, 10)]
#: generated: (threads, seconds, from (threads, seconds), time factor, thread factor)
GENERATED = [
    (8, 600, (8, 60), 10, 1),
    (64, 180, (64, 60), 3, 1),
    (64, 600, (64, 60), 10, 1),
    (256, 60, (256, 10), 6, 1),
    (256, 60, (64, 60), 1, 4),
    (256, 600, (256, 10), 60, 1),
]


def real_name(threads: int, seconds: int) -> str:
    return f"real-{threads}t-{seconds}s"


def gen_name(threads: int, seconds: int, src: tuple[int, int], k: int, m: int) -> str:
    return f"gen-{threads}t-{seconds}s-from-{src[0]}t-{src[1]}s-x{k}-t{m}"


def record(threads: int, seconds: int) -> Path:
    out = BUNDLES / real_name(threads, seconds)
    if (out / "manifest.json").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    BUNDLES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        args = ["--threads", str(threads)]
        with Service("lock_contention", args, Path(tmp) / "ends.txt", seconds + 600) as svc:
            time.sleep(3)
            argv = [*DIAGNOSE, "attach", str(svc.pid), "-d", str(seconds), "-o", str(out),
                    "--format", "json"]  # fmt: skip
            rc, wall, _, _ = run_timed(argv, timeout=seconds * 4 + 180)
            svc.stop()
    print(f"# recorded {out.name}: exit {rc}, {wall:.0f} s", file=sys.stderr, flush=True)
    return out


def rows_read(bundle: Path) -> dict[str, int]:
    """Rows of each table the analysis reads (its samples)."""
    out = {}
    for rel in TABLES:
        p = bundle / rel
        if p.exists():
            with p.open("rb") as f:
                out[rel] = max(0, sum(1 for _ in f) - 1)
        elif p.with_suffix(".parquet").exists():
            out[rel] = pq.ParquetFile(p.with_suffix(".parquet")).metadata.num_rows
    return out


def bundle_info(bundle: Path) -> dict[str, Any]:
    man = json.loads((bundle / "manifest.json").read_text())
    files = [f for f in bundle.rglob("*") if f.is_file() and not f.name.startswith("report.")]
    rows = rows_read(bundle)
    return {
        "bundle": bundle.name,
        "generated": man["capture"].get("generated"),
        "seconds": man["capture"].get("duration_actual"),
        "mb": round(sum(f.stat().st_size for f in files) / 2**20, 1),
        "rows": rows,
        "samples": sum(rows.values()),
    }


def measure(bundle: Path, reps: int, path: Path) -> list[dict[str, Any]]:
    info = bundle_info(bundle)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-report-") as out:
        for i in range(reps):
            argv = [*DIAGNOSE, "report", str(bundle), "-o", out, "-q"]
            rc, wall, cpu, rss = run_timed(argv, timeout=1800)
            html = Path(out) / "report.html"
            row = {**info, "rep": i, "rc": rc, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                   "peak_rss_mb": round(rss / 1024, 1), "loadavg": loadavg(),
                   "html_mb": round(html.stat().st_size / 2**20, 2) if html.exists() else None}  # fmt: skip
            rows.append(row)
            append_row(path, row)
            print(json.dumps({k: v for k, v in row.items() if k != "rows"}), file=sys.stderr)
    return rows


def summarise(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| bundle | made how | samples (rows) | bundle MB | report wall s | peak RSS MiB | HTML MB |",
        "|---|---|---|---|---|---|---|",
    ]
    xs, ts, ms = [], [], []
    for name in dict.fromkeys(r["bundle"] for r in rows):
        sel = [r for r in rows if r["bundle"] == name and r["rc"] == 0]
        if not sel:
            lines.append(f"| {name} | failed: exit {rows[0]['rc']} | | | | | |")
            continue
        r0 = sel[0]
        gen = r0["generated"]
        how = (
            f"generated: x{gen['time_factor']} in time, x{gen['thread_factor']} in threads"
            if gen
            else "recorded"
        )
        wall = stat([r["wall_s"] for r in sel])
        rss = stat([r["peak_rss_mb"] for r in sel])
        xs.append(r0["samples"])
        ts.append(wall.median)
        ms.append(rss.median)
        lines.append(
            f"| {name} | {how} | {r0['samples']:,} | {r0['mb']} | {wall.fmt('.2f')} "
            f"| {rss.fmt('.0f')} | {r0['html_mb']} |"
        )
    if len(xs) >= 3:
        s, b, r2 = linear_fit(xs, ts)
        sm, bm, r2m = linear_fit(xs, ms)
        lines.append("")
        lines.append(
            f"Fit over {len(xs)} bundles: wall = {s * 1e6:.2f} us x samples + {b:.2f} s "
            f"(r^2 {r2:.3f}); peak RSS = {sm * 2**20:.0f} bytes x samples + {bm:.0f} MiB "
            f"(r^2 {r2m:.3f})."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks analysis", description=__doc__)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated bundle names to measure")
    p.add_argument("--no-generated", action="store_true")
    p.add_argument("--summarise", type=Path, help="print the table of a raw-rows file, no runs")
    args = p.parse_args(argv)
    if args.summarise:
        print(summarise([json.loads(x) for x in args.summarise.read_text().splitlines()]))
        return
    print(f"# machine: {machine_line()}", file=sys.stderr)
    bundles = [record(t, s) for t, s in REAL]
    if not args.no_generated:
        for t, s, src, k, m in GENERATED:
            dst = BUNDLES / gen_name(t, s, src, k, m)
            if not (dst / "manifest.json").exists():
                shutil.rmtree(dst, ignore_errors=True)
                scale(BUNDLES / real_name(*src), dst, k, m)
            bundles.append(dst)
    if args.only:
        bundles = [b for b in bundles if b.name in args.only.split(",")]
    path = results_file("analysis")
    print(f"# raw rows: {path}", file=sys.stderr)
    rows = []
    for b in bundles:
        rows += measure(b, args.reps, path)
    print(f"load average at the end: {loadavg()}")
    print(summarise(rows))


if __name__ == "__main__":
    main()
