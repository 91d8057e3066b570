"""What perf's recordings cost a target: throughput and file size, alternating runs.

Not a test (no timing is ever asserted): a measurement to run by hand, whose medians go
into the perf collectors' documentation and the benchmark suite::

    python tests/targets/perf_overhead.py --rounds 5 --seconds 12 --warmup 2 > runs.jsonl

Each run starts tests/targets/perf_target.py WORKLOAD, lets it warm up, records it with
one configuration (the exact perf commands of diagnose's collectors) for the rest of its
run, and prints one JSON line: workload, config, rps, bytes recorded, seconds recorded.
Configurations alternate within each round, so drift of the shared host spreads evenly.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = Path(__file__).with_name("perf_target.py")
BASE = ["record", "--no-bpf-event", "-N", "-B", "-k", "CLOCK_MONOTONIC"]
CONFIGS: dict[str, list[str]] = {
    "none": [],
    "perf_fp": [*BASE, "-m", "128", "-e", "cpu-clock", "-F", "100", "--call-graph", "fp"],
    "perf_dwarf": [*BASE, "-m", "128", "-e", "cpu-clock", "-F", "100", "--call-graph", "dwarf,16384"],
    "perf_sched": [*BASE, "-m", "256", "--switch-events", "-e", "sched:sched_switch/call-graph=fp/",
                   "-e", "sched:sched_wakeup", "-e", "syscalls:sys_enter_futex",
                   "-e", "syscalls:sys_exit_futex"],
}  # fmt: skip


def run(workload: str, config: str, seconds: float, warmup: float, tmp: str) -> dict:
    if workload.endswith(".py"):  # a sample of samples/: its rps includes the warm-up
        argv = [sys.executable, workload, "--seconds", str(seconds)]
    else:
        argv = [sys.executable, str(TARGET), workload, "--seconds", str(seconds),
                "--warmup", str(warmup)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if not workload.endswith(".py"):
        assert proc.stdout.readline().strip() == "ready"
    time.sleep(warmup)
    data = os.path.join(tmp, "perf.data")
    recorded = 0
    rec_seconds = max(1.0, seconds - warmup - 0.5)
    perf = None
    if CONFIGS[config]:
        perf = subprocess.Popen(
            [
                "perf",
                *CONFIGS[config],
                "-p",
                str(proc.pid),
                "-o",
                data,
                "--",
                "sleep",
                str(rec_seconds),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    out, _ = proc.communicate(timeout=seconds + 60)
    if perf is not None:
        perf.wait(timeout=60)
        recorded = os.path.getsize(data) if os.path.exists(data) else 0
        os.unlink(data)
    stats = json.loads(out.strip().splitlines()[-1])
    return {"workload": workload, "config": config, "rps": stats["rps"],
            "bytes": recorded, "recorded_s": rec_seconds if perf else 0}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=12)
    p.add_argument("--warmup", type=float, default=2)
    p.add_argument(
        "--workloads",
        default="lock,oversub,gil",
        help="perf_target.py workloads, or paths of samples/*.py (which print rps on exit)",
    )
    p.add_argument("--configs", default=",".join(CONFIGS))
    args = p.parse_args()
    rows = []
    configs = args.configs.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for w in args.workloads.split(","):
                order = configs[r % len(configs) :] + configs[: r % len(configs)]
                for c in order:
                    row = run(w, c, args.seconds, args.warmup, tmp)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    for w in args.workloads.split(","):
        base = statistics.median(
            x["rps"] for x in rows if x["workload"] == w and x["config"] == "none"
        )
        for c in configs:
            sel = [x for x in rows if x["workload"] == w and x["config"] == c]
            rps = statistics.median(x["rps"] for x in sel)
            mb10 = (
                statistics.median(x["bytes"] / x["recorded_s"] * 10 / 2**20 for x in sel)
                if c != "none"
                else 0
            )
            print(f"# {w:8} {c:11} rps {rps:9.1f}  cost {100 * (1 - rps / base):6.1f}%  {mb10:7.2f} MB/10 s",
                  file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main()
