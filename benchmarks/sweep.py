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


def step_table(setting: dict[str, Any]) -> list[str]:
    out = [
        "| users | QPS | P50 ms | P95 ms | P99 ms | generator CPU | verdict | band |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in setting["steps"]:
        g = r.get("generator") or {}
        v = (r.get("verdict") or {}).get("label", "no verdict")
        cpu = f"{g['cpu_cores']:.2f}" if g.get("measured") else "n/a"
        out.append(
            f"| {r['users']} | {r['qps'] or 0:.1f} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} "
            f"| {cpu} | {v} | {r['band']} |"
        )
    return out


def bench_pool(a: argparse.Namespace, rows_path: Path) -> None:
    steps = [int(x) for x in a.steps.split(",")]
    print(
        "\n## pool: samples/sweep_pool.py (4 lanes x 100 ms: 40 QPS from 4 concurrent requests)\n"
    )
    if shutil.which("wrk"):
        own = own_figures(steps, a.step_duration, a.warmup)
        points = [
            StepPoint(r["users"], r["rps"], p50_ms=r["p50_ms"], p99_ms=r["p99_ms"]) for r in own
        ]
        knee = find_knee(points)
        append_row(
            rows_path, {"target": "pool", "kind": "own_figures", "rows": own, "knee": knee.users}
        )
        print("The service's own figures (wrk load, no diagnose):\n")
        print("| users | QPS (served) | P50 ms | P99 ms | most in flight |\n|---|---|---|---|---|")
        for r in own:
            print(
                f"| {r['users']} | {r['rps']:.1f} | {r['p50_ms']} | {r['p99_ms']} | {r['max_in_flight']} |"
            )
        print(f"\nKnee of the service's own curve: {knee.users} users ({knee.text}).\n")
    else:
        print("wrk is not installed: the service's own curve is skipped (apt-get install wrk)\n")
    for rep in range(a.reps):
        rc, m, wall = sweep_sample("sweep_pool", a.steps, a)
        if m is None:
            print(f"rep {rep + 1}: diagnose sweep failed (exit {rc})")
            continue
        (s,) = m["settings"]
        k, rec = s["knee"], m["capacity"] or {}
        last = s["steps"][-1]
        served_at = next((r for r in s["steps"] if r["users"] == rec.get("users")), None)
        row = {"target": "pool", "kind": "sweep", "rep": rep + 1, "rc": rc, "wall_s": round(wall, 1),
               "knee": k["users"], "knee_status": k["status"], "verdict_at": (k.get("verdict_at") or {}).get("label"),
               "verdict_last": (k.get("verdict_last") or {}).get("label"), "recommended": rec.get("users"),
               "steps": [{x: r[x] for x in ("users", "qps", "p50_ms", "p95_ms", "p99_ms", "band")} for r in s["steps"]]}  # fmt: skip
        append_row(rows_path, row)
        print(f"diagnose sweep, rep {rep + 1} (exit {rc}, {wall:.0f} s):\n")
        print("\n".join(step_table(s)))
        print(f"\nKnee: {k['text']}.")
        if served_at and last["qps"]:
            print(
                f"Serving at the recommended {served_at['users']} concurrent requests instead of "
                f"{last['users']}: {served_at['qps']:.1f} against {last['qps']:.1f} QPS "
                f"(x{served_at['qps'] / last['qps']:.2f}), P99 {served_at['p99_ms']} against "
                f"{last['p99_ms']} ms (x{served_at['p99_ms'] / last['p99_ms']:.2f})."
            )
        print()


def bench_onnx(a: argparse.Namespace, rows_path: Path) -> None:
    print(
        "\n## onnx: samples/sweep_onnx.py, --vary INTRA_OP_THREADS=4,1,2 (4, the default, first)\n"
    )
    steps = ",".join(x for x in a.steps.split(",") if int(x) <= 8)
    for rep in range(a.reps):
        rc, m, wall = sweep_sample("sweep_onnx", steps, a, "--vary", "INTRA_OP_THREADS=4,1,2")
        if m is None:
            print(f"rep {rep + 1}: diagnose sweep failed (exit {rc})")
            continue
        best = m["best"]
        append_row(rows_path, {"target": "onnx", "kind": "sweep", "rep": rep + 1, "rc": rc,
                               "wall_s": round(wall, 1), "best": best})  # fmt: skip
        print(f"diagnose sweep, rep {rep + 1} (exit {rc}, {wall:.0f} s):\n")
        print(
            "| setting | knee (users) | verdict at the knee | serve at | QPS | P99 ms |\n|---|---|---|---|---|---|"
        )
        for s, r in zip(m["settings"], best["rows"], strict=True):
            v = (s["knee"].get("verdict_at") or {}).get("label", "n/a")
            print(
                f"| {s['name']} | {r['knee_users']} | {v} | {r['users']} | {r['qps'] or 0:.1f} | {r['p99_ms']} |"
            )
        print(f"\n{best['text']}.\n")


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks sweep", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--targets", default="pool,onnx")
    p.add_argument("--steps", default="1,2,4,8,16,32")
    p.add_argument("--step-duration", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--reps", type=int, default=1)
    a = p.parse_args(argv)
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
