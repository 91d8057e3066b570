"""Counterfactuals of the sample zoo: does fixing only the expected bottleneck pay?

For each zoo sample (samples/services/NAME/sample.toml), runs the service as it is
(``base``), with its counterfactual fix, and with each alternative fix (the mixed samples'
secondary bottleneck), in alternating rounds (``--rounds``, at least 3; the order rotates
each round). Each run starts the service fresh, loads it with locust for warm-up +
``--seconds``, and takes the throughput from locust's own stats over the measured window,
with the CPU (cores) of the service's process tree and of locust over the same window.

A sample's expected verdict holds when, on medians:
  throughput  fix / base >= 1.3 (and, with alternatives, the fix gains more than each);
  io          fix (a faster dependency) / base >= 1.3, the service below half a core;
  idle        fix (more users) / base >= 1.3, the service below half a core.

Run alone on a quiet host (other load shares the cores and shrinks every CPU-bound gain):
  python -m benchmarks counterfactual [--rounds 3] [--seconds 12] [NAMES]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import append_row, loadavg, machine_line, results_file, stat
from benchmarks.zoo import Change, ZooSample, measure, select

GAIN = 1.3
LOW_CPU = 0.5  # cores: "the CPU stays low" for the io and idle checks


def variants(s: ZooSample) -> list[tuple[str, Change | None]]:
    return [("base", None), ("fix", s.fix)] + [(f"alt{i}", a) for i, a in enumerate(s.alternatives)]


def run_sample(s: ZooSample, rounds: int, seconds: float, path: Path) -> list[dict[str, Any]]:
    rows = []
    vs = variants(s)
    with tempfile.TemporaryDirectory(prefix=f"zoo-cf-{s.name}-") as tmp:
        for r in range(rounds):
            order = vs[r % len(vs) :] + vs[: r % len(vs)]
            for label, change in order:
                try:
                    m = measure(s, change, Path(tmp), seconds)
                except RuntimeError as exc:
                    m = {"error": str(exc)[:500]}
                row = {"sample": s.name, "round": r, "variant": label, "loadavg": loadavg(), **m}
                rows.append(row)
                append_row(path, row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def judge(s: ZooSample, rows: list[dict[str, Any]]) -> dict[str, Any]:
    def med(variant: str, key: str) -> float:
        return stat([r.get(key) for r in rows if r["variant"] == variant and key in r]).median

    base, fix = med("base", "rps"), med("fix", "rps")
    gain = fix / base if base and base > 0 else float("nan")
    alts = [
        med(f"alt{i}", "rps") / base if base else float("nan") for i in range(len(s.alternatives))
    ]
    ok = gain >= GAIN and all(gain > a for a in alts)
    if s.check in ("io", "idle"):
        ok = ok and max(med("base", "service_cores"), med("fix", "service_cores")) < LOW_CPU
    return {
        "sample": s.name,
        "expected": s.expected,
        "fix": s.fix.name,
        "check": s.check,
        "base_rps": base,
        "fix_rps": fix,
        "gain": gain,
        "alternatives": [(a.name, g) for a, g in zip(s.alternatives, alts, strict=True)],
        "base_cores": med("base", "service_cores"),
        "fix_cores": med("fix", "service_cores"),
        "locust_cores": max(med(v, "locust_cores") for v, _ in variants(s)),
        "n": min(sum(1 for r in rows if r["variant"] == v and "rps" in r) for v, _ in variants(s)),
        "ok": ok,
    }


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| sample | expected | fix (counterfactual) | base req/s | fixed req/s | gain "
        "| other fix: gain | service cores base / fixed | locust cores (max) | rounds | holds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for j in results:
        alts = "; ".join(f"{n}: {g:.2f}x" for n, g in j["alternatives"]) or "-"
        lines.append(
            f"| {j['sample']} | {j['expected']} | {j['fix']} | {j['base_rps']:.1f} "
            f"| {j['fix_rps']:.1f} | {j['gain']:.2f}x | {alts} "
            f"| {j['base_cores']:.2f} / {j['fix_cores']:.2f} | {j['locust_cores']:.2f} "
            f"| {j['n']} | {'yes' if j['ok'] else 'NO'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks counterfactual", description=__doc__)
    p.add_argument("names", nargs="*", help="zoo samples (default: all)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=12.0, help="measured window per run")
    p.add_argument("--summarise", type=Path, help="print the table of a raw-rows file, no runs")
    args = p.parse_args(argv)
    samples = select(args.names)
    if args.summarise:
        rows = [json.loads(line) for line in args.summarise.read_text().splitlines()]
        have = {r["sample"] for r in rows}
        print(
            table(
                [
                    judge(s, [r for r in rows if r["sample"] == s.name])
                    for s in samples
                    if s.name in have
                ]
            )
        )
        return
    if args.rounds < 3:
        p.error("--rounds must be at least 3")
    path = results_file("counterfactual")
    print(f"# machine: {machine_line()}", file=sys.stderr)
    print(f"# raw rows: {path}", file=sys.stderr)
    results = [judge(s, run_sample(s, args.rounds, args.seconds, path)) for s in samples]
    print(f"load average at the end: {loadavg()}")
    print(table(results))


if __name__ == "__main__":
    main()
