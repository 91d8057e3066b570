"""What diagnose itself costs during a capture, part by part, and its samplers' unit costs.

For each target (a sample service started in its own session) and repetition, runs
``diagnose attach -d SECONDS --cpu-budget 0`` (every sampler at the rate asked for) and
reads the report's ``capture.tool_cpu_parts``: diagnose's threads and helpers, measured
over the window (collect/toolcpu.py). From each part it derives the unit cost the CPU
budget plans with (collect/budget.py ``Costs``): CPU-seconds per thread-sample of py-spy
and of the GIL sampler, and per /proc tick (fitted over the thread counts: per tick + per
thread-tick). Then one capture per target at the defaults shows what the budget chose and
what diagnose then used. Usage (as root, repository root, alone on the host):

    python -m benchmarks tool-cost --reps 3 --seconds 10
    python -m benchmarks tool-cost --summarise /tmp/diagnose-bench/tool-cost-....jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, append_row, linear_fit, machine, results_file

#: (name, sample, its options): waiting threads with shallow stacks, and busy ones
TARGETS = {
    "lock-5": ("lock_contention", ["--threads", "4"]),
    "lock-25": ("lock_contention", ["--threads", "24"]),
    "lock-65": ("lock_contention", ["--threads", "64"]),
    "tokenize-5": ("preprocess_tokenize", []),
}


def _part(parts: list[dict[str, Any]], name: str) -> float:
    return sum(float(p["cpu_s"]) for p in parts if p["part"] == name)


def capture_once(target: str, seconds: float, budget: str | None) -> dict[str, Any]:
    sample, opts = TARGETS[target]
    proc = subprocess.Popen(
        [sys.executable, f"{sample}.py", "--seconds", str(seconds + 60), *opts],
        cwd=ROOT / "samples",
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        time.sleep(2.0)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bundle"
            cmd = [sys.executable, "-m", "diagnose", "attach", str(proc.pid), "-d", str(seconds),
                   "-o", str(out), "--format", "json"]  # fmt: skip
            if budget is not None:
                cmd += ["--cpu-budget", budget]
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            report = json.loads((out / "report.json").read_text())
    finally:
        proc.kill()
        proc.wait()
    cap, cols = report["capture"], report["collectors"]
    parts = cap.get("tool_cpu_parts") or []
    window = float(cols["proc"]["details"].get("tool_cpu_parts_span_s") or 0.0)
    rates = {k: cols[k]["details"].get("rate_hz") for k in ("pyspy", "gil", "proc") if k in cols}
    return {
        "target": target,
        "budget": budget or "default",
        "threads": report["metrics"].get("threads_total"),
        "window_s": window,
        "rates": rates,
        "plan": cap.get("cpu_budget"),
        "parts": {p["part"]: p["cpu_s"] for p in parts},
        "pyspy_s": _part(parts, "py-spy trace"),
        "gil_s": _part(parts, "py-spy gil"),
        "proc_s": _part(parts, "diagnose proc"),
        "window_cores": round(sum(float(p["cpu_s"]) for p in parts) / window, 4)
        if window
        else None,
        "tool_cpu_cores": report["metrics"].get("tool_cpu_cores"),
        "verdict": f"{report['verdict']['primary']}/{report['verdict'].get('kind') or '-'}",
    }


def unit_costs(rows: list[dict[str, Any]]) -> dict[str, float]:
    """CPU-seconds per unit of sampling work, from the full-rate (budget 0) captures."""
    full = [r for r in rows if r["budget"] == "0" and r["window_s"] > 0 and r["threads"]]
    py = [r["pyspy_s"] / (r["rates"]["pyspy"] * r["threads"] * r["window_s"]) for r in full]
    gil = [r["gil_s"] / (r["rates"]["gil"] * r["threads"] * r["window_s"]) for r in full]
    # /proc: CPU per tick = a + b x threads, least squares over the captures
    x = [float(r["threads"]) for r in full]
    y = [r["proc_s"] / (r["rates"]["proc"] * r["window_s"]) for r in full]
    b, a, _r2 = linear_fit(x, y) if len(set(x)) >= 2 else (0.0, statistics.median(y), 1.0)
    return {
        "pyspy_per_thread_sample_us": round(statistics.median(py) * 1e6, 1),
        "pyspy_per_thread_sample_max_us": round(max(py) * 1e6, 1),
        "gil_per_thread_sample_us": round(statistics.median(gil) * 1e6, 1),
        "gil_per_thread_sample_max_us": round(max(gil) * 1e6, 1),
        "proc_per_tick_us": round(a * 1e6, 1),
        "proc_per_thread_tick_us": round(b * 1e6, 1),
    }


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| target | budget | threads | rates py-spy/GIL/proc Hz | py-spy s | GIL s | /proc s | "
        "cores in the window | cores, start-up included | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["target"], r["budget"]), []).append(r)

    def med(rs: list[dict[str, Any]], key: str) -> str:
        vals = [float(r[key]) for r in rs if r.get(key) is not None]
        if not vals:
            return "-"
        return f"{statistics.median(vals):.3f} ({min(vals):.3f} to {max(vals):.3f})"

    for (target, budget), rs in groups.items():
        r0 = rs[0]
        rates = "/".join(str(r0["rates"].get(k, "-")) for k in ("pyspy", "gil", "proc"))
        verdicts = ", ".join(sorted({r["verdict"] for r in rs}))
        out.append(
            f"| {target} | {budget} | {r0['threads']} | {rates} | {med(rs, 'pyspy_s')} | "
            f"{med(rs, 'gil_s')} | {med(rs, 'proc_s')} | {med(rs, 'window_cores')} | "
            f"{med(rs, 'tool_cpu_cores')} | {verdicts} |"
        )
    return "\n".join(out)


def report(rows: list[dict[str, Any]]) -> None:
    print(table(rows))
    print()
    for k, v in unit_costs(rows).items():
        print(f"{k}: {v}")


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks tool-cost", description=__doc__)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument("--summarise", type=Path, default=None, help="print the tables from raw rows")
    args = p.parse_args(argv)
    if args.summarise:
        text = args.summarise.read_text()
        report([json.loads(line) for line in text.splitlines() if line.strip()])
        return
    for k, v in machine().items():
        print(f"{k}: {v}")
    log = results_file("tool-cost")
    rows = []
    targets = args.targets.split(",")
    for rep in range(args.reps):
        for target in targets:  # the budgets alternate within each repetition
            for budget in ("0", None) if rep % 2 == 0 else (None, "0"):
                row = capture_once(target, args.seconds, budget)
                append_row(log, row)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"raw rows: {log}")
    report(rows)


if __name__ == "__main__":
    main(sys.argv[1:])
