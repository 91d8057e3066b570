"""diagnose sweep on the two sweep samples: does it find the knee, and does its recommendation
beat the default?

- ``pool`` (samples/sweep_pool.py: 4 lanes x 100 ms, capacity 40 QPS at 4 concurrent
  requests). First the service's own figures, without diagnose or locust: wrk at each step,
  the service's ``GET /stats`` (requests it served, its own P50/P99) read around each window;
  the knee of that curve (the same rule) is the reference. Then ``diagnose sweep --run`` with
  locust: its knee, the verdict at and past it, and the recommendation against the highest
  step (what an unbounded worker pool runs at).
- ``onnx`` (samples/sweep_onnx.py): ``diagnose sweep --run --vary INTRA_OP_THREADS=4,1,2``:
  the best setting against the default (4, listed first).

    python -m benchmarks sweep                       # both, 10 s steps after 5 s warm-ups
    python -m benchmarks sweep --targets pool --step-duration 5 --warmup 3

Run it alone on the host: every figure here is a throughput, and other work on two cores
moves it. Raw rows go to /tmp/diagnose-bench/sweep-*.jsonl.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DIAGNOSE,
    PYTHON,
    SAMPLES,
    append_row,
    loadavg,
    machine_line,
    results_file,
)
from diagnose.sweep.analysis import StepPoint, find_knee

LOCUSTFILE = SAMPLES / "sweep_locustfile.py"
POOL_TITLE = (
    "\n## pool: samples/sweep_pool.py (4 lanes x 100 ms: 40 QPS from 4 concurrent requests)\n"
)
ONNX_TITLE = (
    "\n## onnx: samples/sweep_onnx.py, --vary INTRA_OP_THREADS=4,1,2 (4, the default, first)\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def wait_listening(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def own_figures(steps: list[int], seconds: float, warmup: float) -> list[dict[str, Any]]:
    """The pool sample's curve from its own count of what it served, loaded by wrk."""
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, str(SAMPLES / "sweep_pool.py"), "--port", str(port), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    rows = []
    try:
        wait_listening(port)
        url = f"http://127.0.0.1:{port}"
        for users in steps:
            wrk = ["wrk", "-t1", f"-c{users}", f"{url}/infer"]
            subprocess.run(
                [*wrk[:3], f"-d{max(1, round(warmup))}s", wrk[3]], capture_output=True, check=False
            )
            get_json(f"{url}/stats?reset=1")
            subprocess.run(
                [*wrk[:3], f"-d{max(1, round(seconds))}s", wrk[3]], capture_output=True, check=False
            )
            own = get_json(f"{url}/stats?reset=1")
            rows.append({"users": users, **own})
    finally:
        proc.kill()
        proc.wait()
    return rows


def run_sweep(args: list[str], timeout: float) -> tuple[int, dict[str, Any] | None, float]:
    out = Path(tempfile.mkdtemp(prefix="bench-sweep-")) / "s"
    t0 = time.monotonic()
    proc = subprocess.run([*DIAGNOSE, "sweep", "-o", str(out), *args], capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip
    wall = time.monotonic() - t0
    report = out / "report.json"
    data = json.loads(report.read_text()) if report.is_file() else None
    if data is None:
        print(proc.stderr[-2000:])
    shutil.rmtree(out.parent, ignore_errors=True)
    return proc.returncode, data, wall


def sweep_sample(
    sample: str, steps: str, a: argparse.Namespace, *extra: str
) -> tuple[int, dict[str, Any] | None, float]:
    """``diagnose sweep --run`` of a sweep sample on a free port, with locust."""
    port = free_port()
    return run_sweep(
        ["--run", *extra, "--load", str(LOCUSTFILE), "--host", f"http://127.0.0.1:{port}",
         "--steps", steps, "--step-duration", f"{a.step_duration:g}", "--warmup", f"{a.warmup:g}",
         "--", PYTHON, str(SAMPLES / f"{sample}.py"), "--port", str(port)],
        timeout=3600,
    )  # fmt: skip


def print_own(row: dict[str, Any]) -> None:
    print("The service's own figures (wrk load, no diagnose):\n")
    print("| users | QPS (served) | P50 ms | P99 ms |\n|---|---|---|---|")
    for r in row["rows"]:
        print(f"| {r['users']} | {r['rps']:.1f} | {r['p50_ms']} | {r['p99_ms']} |")
    print(f"\nKnee of the service's own curve: {row['knee_text']}.\n")


def print_pool(row: dict[str, Any]) -> None:
    print(f"diagnose sweep, rep {row['rep']} (exit {row['rc']}, {row['wall_s']:.0f} s):\n")
    print("| users | QPS | P50 ms | P95 ms | P99 ms | generator CPU | verdict | band |")
    print("|---|---|---|---|---|---|---|---|")
    for r in row["steps"]:
        print(
            f"| {r['users']} | {r['qps'] or 0:.1f} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} "
            f"| {r['generator_cores']} | {r['verdict']} | {r['band']} |"
        )
    print(f"\nKnee: {row['knee_text']}.")
    steps = {r["users"]: r for r in row["steps"]}
    served, last = steps.get(row["recommended"]), row["steps"][-1]
    if served and served["qps"] and last["qps"] and last["p99_ms"]:
        print(
            f"Serving at the recommended {served['users']} concurrent requests instead of "
            f"{last['users']}: {served['qps']:.1f} against {last['qps']:.1f} QPS "
            f"(x{served['qps'] / last['qps']:.2f}), P99 {served['p99_ms']} against "
            f"{last['p99_ms']} ms (x{served['p99_ms'] / last['p99_ms']:.2f})."
        )
    print()


def print_onnx(row: dict[str, Any]) -> None:
    print(f"diagnose sweep, rep {row['rep']} (exit {row['rc']}, {row['wall_s']:.0f} s):\n")
    print("| setting | knee (users) | verdict at the knee | serve at | QPS | P99 ms |")
    print("|---|---|---|---|---|---|")
    for r in row["settings"]:
        print(
            f"| {r['setting']} | {r['knee_users']} | {r['verdict_at']} | {r['users']} "
            f"| {r['qps'] or 0:.1f} | {r['p99_ms']} |"
        )
    print(f"\n{row['text']}.\n")


def bench_pool(a: argparse.Namespace, rows_path: Path) -> None:
    steps = [int(x) for x in a.steps.split(",")]
    print(POOL_TITLE)
    if shutil.which("wrk"):
        own = own_figures(steps, a.step_duration, a.warmup)
        knee = find_knee(
            [StepPoint(r["users"], r["rps"], p50_ms=r["p50_ms"], p99_ms=r["p99_ms"]) for r in own]
        )
        row = {"target": "pool", "kind": "own_figures", "rows": own, "knee": knee.users,
               "knee_text": knee.text}  # fmt: skip
        append_row(rows_path, row)
        print_own(row)
    else:
        print("wrk is not installed: the service's own curve is skipped (apt-get install wrk)\n")
    for rep in range(a.reps):
        rc, m, wall = sweep_sample("sweep_pool", a.steps, a)
        if m is None:
            print(f"rep {rep + 1}: diagnose sweep failed (exit {rc})")
            continue
        (s,) = m["settings"]
        k = s["knee"]
        row = {
            "target": "pool", "kind": "sweep", "rep": rep + 1, "rc": rc, "wall_s": round(wall, 1),
            "knee": k["users"], "knee_status": k["status"], "knee_text": k["text"],
            "recommended": (m["capacity"] or {}).get("users"),
            "steps": [
                {**{x: r[x] for x in ("users", "qps", "p50_ms", "p95_ms", "p99_ms", "band")},
                 "verdict": (r.get("verdict") or {}).get("label", "no verdict"),
                 "generator_cores": (r.get("generator") or {}).get("cpu_cores")}
                for r in s["steps"]
            ],
        }  # fmt: skip
        append_row(rows_path, row)
        print_pool(row)


def bench_onnx(a: argparse.Namespace, rows_path: Path) -> None:
    print(ONNX_TITLE)
    steps = ",".join(x for x in a.steps.split(",") if int(x) <= 8)
    for rep in range(a.reps):
        rc, m, wall = sweep_sample("sweep_onnx", steps, a, "--vary", "INTRA_OP_THREADS=4,1,2")
        if m is None:
            print(f"rep {rep + 1}: diagnose sweep failed (exit {rc})")
            continue
        best = m["best"]
        settings = [
            {**r, "verdict_at": (st["knee"].get("verdict_at") or {}).get("label", "n/a")}
            for st, r in zip(m["settings"], best["rows"], strict=True)
        ]
        row = {"target": "onnx", "kind": "sweep", "rep": rep + 1, "rc": rc,
               "wall_s": round(wall, 1), "settings": settings, "text": best["text"],
               "beats_baseline": best["beats_baseline"]}  # fmt: skip
        append_row(rows_path, row)
        print_onnx(row)


def summarise(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    printers = {("pool", "own_figures"): print_own, ("pool", "sweep"): print_pool,
                ("onnx", "sweep"): print_onnx}  # fmt: skip
    shown = set()
    for row in rows:
        title = POOL_TITLE if row["target"] == "pool" else ONNX_TITLE
        if title not in shown:
            print(title)
            shown.add(title)
        printers[(row["target"], row["kind"])](row)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks sweep", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--targets", default="pool,onnx")
    p.add_argument("--steps", default="1,2,4,8,16,32")
    p.add_argument("--step-duration", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--summarise", type=Path, metavar="FILE", help="print the tables of raw rows")
    a = p.parse_args(argv)
    if a.summarise:
        summarise(a.summarise)
        return
    rows_path = results_file("sweep")
    print(f"# diagnose sweep benchmark\n\n{machine_line()}\n")
    print(
        f"Steps {a.steps}, {a.step_duration:g} s windows after {a.warmup:g} s warm-ups; raw rows: {rows_path}"
    )
    targets = a.targets.split(",")
    if "pool" in targets:
        bench_pool(a, rows_path)
    if "onnx" in targets:
        bench_onnx(a, rows_path)
    print(f"load average at the end: {loadavg()}")
