"""Time to a stable verdict, and the bundle's size per minute, for each sample service.

For each sample: start it (its own session), let it warm up, capture it once for
``--reference`` seconds (60) at diagnose's defaults: that capture's verdict (primary
category and kind) is the reference, and its bundle's size per minute is the bundle-size
figure. Then, for each duration in ``--durations`` (shortest first), capture it
``--reps`` times (5); the stable duration is the shortest whose verdict matched the
reference in every repetition. With ``--all-durations`` every duration is tried even
after one matched (to check that longer ones match too); otherwise the search stops at the
first that matched. Every capture attaches to the same running service, one at a time.
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

from benchmarks.common import (
    Service,
    append_row,
    attach,
    loadavg,
    machine_line,
    results_file,
)

#: sample -> (arguments, warm-up seconds); the verdict tests' warm-ups, at least 2 s
SAMPLES: dict[str, tuple[list[str], float]] = {
    "preprocess_tokenize": ([], 2.0),
    "lock_contention": ([], 2.0),
    "gil_contention": ([], 2.0),
    "oversubscription": ([], 3.0),
    "io_wait": ([], 2.0),
    "idle_service": ([], 2.0),
    "compute_gemm": ([], 2.0),
    "memory_copies": ([], 2.0),
}
REPORT_FILES = ("report.html", "report.md", "report.json")


def capture(pid: int, seconds: float, out: Path) -> dict[str, Any]:
    rc, wall, rep = attach(pid, seconds, out, timeout=seconds * 3 + 120)
    row: dict[str, Any] = {"seconds": seconds, "rc": rc, "wall_s": round(wall, 1)}
    if rep is not None:
        v = rep["verdict"]
        row.update(
            primary=v.get("primary"),
            kind=v.get("kind"),
            confidence=v.get("confidence"),
            host_foreign_cpu_share=rep["metrics"].get("host_foreign_cpu_share"),
        )
    files = [f for f in out.rglob("*") if f.is_file()]
    row["bundle_bytes"] = sum(f.stat().st_size for f in files if f.name not in REPORT_FILES)
    row["report_bytes"] = sum(f.stat().st_size for f in files if f.name in REPORT_FILES)
    row["duration_actual"] = json.loads((out / "manifest.json").read_text())["capture"].get(
        "duration_actual"
    )
    shutil.rmtree(out, ignore_errors=True)
    return row


def bench_sample(
    sample: str, args: argparse.Namespace, tmp: Path, path: Path
) -> list[dict[str, Any]]:
    extra, warm = SAMPLES[sample]
    durations = [float(d) for d in args.durations.split(",")]
    budget = args.reference + warm + (sum(durations) + 15 * len(durations)) * args.reps + 120
    rows = []

    def record(kind: str, row: dict[str, Any]) -> dict[str, Any]:
        row = {"sample": sample, "capture": kind, "loadavg": loadavg(), **row}
        rows.append(row)
        append_row(path, row)
        print(json.dumps(row), file=sys.stderr, flush=True)
        return row

    with Service(sample, extra, tmp / "ends.txt", seconds=budget) as svc:
        time.sleep(warm)
        ref = record("reference", capture(svc.pid, args.reference, tmp / "b"))
        want = (ref.get("primary"), ref.get("kind"))
        for d in durations:
            got = [record("short", capture(svc.pid, d, tmp / "b")) for _ in range(args.reps)]
            if (
                all((g.get("primary"), g.get("kind")) == want for g in got)
                and not args.all_durations
            ):
                break
        svc.stop()
    return rows


def summarise(rows: list[dict[str, Any]], reps: int) -> str:
    lines = [
        "| sample | verdict of the 60 s capture | matches per duration | stable from "
        "| bundle MB per minute (reports) |",
        "|---|---|---|---|---|",
    ]
    for sample in dict.fromkeys(r["sample"] for r in rows):
        sel = [r for r in rows if r["sample"] == sample]
        ref = next(r for r in sel if r["capture"] == "reference")
        want = (ref.get("primary"), ref.get("kind"))
        per: dict[float, list[bool]] = {}
        misses: dict[float, list[str]] = {}
        for r in sel:
            if r["capture"] == "short":
                ok = (r.get("primary"), r.get("kind")) == want
                per.setdefault(r["seconds"], []).append(ok)
                if not ok:
                    misses.setdefault(r["seconds"], []).append(
                        f"{r.get('primary')}/{r.get('kind')}"
                    )
        cells = []
        for d, oks in per.items():
            miss = f" (else {', '.join(sorted(set(misses[d])))})" if d in misses else ""
            cells.append(f"{d:g} s: {sum(oks)}/{len(oks)}{miss}")
        stable = next((f"{d:g} s" for d, oks in per.items() if len(oks) >= reps and all(oks)), "-")
        per_min = ref["bundle_bytes"] / 2**20 * 60 / (ref.get("duration_actual") or 60)
        lines.append(
            f"| {sample} | {want[0]}/{want[1]} ({ref.get('confidence')}) | {'; '.join(cells)} "
            f"| {stable} | {per_min:.1f} ({ref['report_bytes'] / 2**20:.1f}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks verdict", description=__doc__)
    p.add_argument("--samples", default=",".join(SAMPLES))
    p.add_argument("--reference", type=float, default=60.0)
    p.add_argument("--durations", default="2,5,10", help="shortest first")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--all-durations", action="store_true")
    p.add_argument("--summarise", type=Path, help="print the table of a raw-rows file, no runs")
    args = p.parse_args(argv)
    if args.summarise:
        rows = [json.loads(line) for line in args.summarise.read_text().splitlines()]
        print(summarise(rows, args.reps))
        return
    path = results_file("verdict")
    print(f"# machine: {machine_line()}", file=sys.stderr)
    print(f"# raw rows: {path}", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-verdict-") as tmp:
        for sample in args.samples.split(","):
            rows += bench_sample(sample, args, Path(tmp), path)
    print(f"load average at the end: {loadavg()}")
    print(summarise(rows, args.reps))


if __name__ == "__main__":
    main()
