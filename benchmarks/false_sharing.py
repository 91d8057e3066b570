"""The false-sharing samples: their throughput per layout, and how repeatably diagnose finds them.

    python -m benchmarks false-sharing throughput [--rounds 5] [--seconds 5]
    python -m benchmarks false-sharing diagnose [--captures 5] [--duration 10]

``throughput`` runs samples/false_sharing_native.py in its four layouts (adjacent counters,
``--pad``, ``--shared``, ``--private``) and samples/false_sharing_service.py with and without
``--pad``, alternating them in a rotating order each round, and prints the median items/s
(requests/s for the service) with its range and the ratio to the adjacent layout measured in
the same round. On a host whose other processes take the cores the threads rarely run at the
same time, and false sharing costs little: quote figures from a quiet host.

``diagnose`` captures each variant ``--captures`` times with ``diagnose attach PID
--false-sharing -d DURATION`` (every collector this host supports plus false_sharing) and
prints, per variant, how many captures got the false-sharing finding and the true-sharing
finding, the primary verdicts, and the line's fields and writer threads.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import (
    DIAGNOSE,
    Service,
    append_row,
    loadavg,
    machine_line,
    results_file,
    run_timed,
    stat,
)

#: name -> (sample, arguments, seconds of warm-up)
VARIANTS: dict[str, tuple[str, list[str], float]] = {
    "native adjacent": ("false_sharing_native", [], 1.0),
    "native --pad": ("false_sharing_native", ["--pad"], 1.0),
    "native --shared": ("false_sharing_native", ["--shared"], 1.0),
    "native --private": ("false_sharing_native", ["--private"], 1.0),
    "service": ("false_sharing_service", [], 2.5),
    "service --pad": ("false_sharing_service", ["--pad"], 2.5),
}
BASE = {"native": "native adjacent", "service": "service"}
#: verdicts that say other processes (or diagnose) took the cores: on a busy host they
#: rightly rank first, and the table also shows what ranks first after them
CROWDED = {"scheduling/cpu_contention", "scheduling/observer_effect"}


def throughput(rounds: int, seconds: float, names: list[str]) -> None:
    path = results_file("false-sharing-throughput")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-fs-") as tmp:
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                sample, args, warm = VARIANTS[name]
                with Service(sample, args, Path(tmp) / "ends.txt", seconds=600) as svc:
                    time.sleep(warm)
                    t0 = time.monotonic()
                    time.sleep(seconds)
                    t1 = time.monotonic()
                    svc.stop()
                rps = svc.rps(t0, t1)
                ips = svc.stats.get("items_per_s")
                row = {"round": r, "variant": name, "rps": rps, "items_per_s": ips,
                       "loadavg": loadavg()}  # fmt: skip
                rows.append(row)
                append_row(path, row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(
        "| variant | requests/s in window, median (range) | vs the unpadded layout, median of rounds |"
    )
    print("|---|---|---|")
    for name in names:
        sel = [r for r in rows if r["variant"] == name]
        base_name = BASE[name.split()[0]]
        base = {r["round"]: r["rps"] for r in rows if r["variant"] == base_name}
        ratio = stat([r["rps"] / base[r["round"]] for r in sel if base.get(r["round"])])
        print(f"| {name} | {stat([r['rps'] for r in sel]).fmt('.0f')} | {ratio.fmt('.2f', 'x')} |")


def diagnosed(captures: int, duration: int, names: list[str]) -> None:
    path = results_file("false-sharing-diagnose")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-fs-") as tmp:
        for i in range(captures):
            for name in names:
                sample, args, warm = VARIANTS[name]
                out = Path(tmp) / "bundle"
                shutil.rmtree(out, ignore_errors=True)
                with Service(sample, args, Path(tmp) / "ends.txt", seconds=600) as svc:
                    time.sleep(warm)
                    argv = [*DIAGNOSE, "attach", str(svc.pid), "--false-sharing", "-d",
                            str(duration), "-o", str(out), "--format", "json"]  # fmt: skip
                    rc, wall, cpu, _ = run_timed(argv, timeout=duration * 20 + 60)
                    svc.stop()
                rep = json.loads((out / "report.json").read_text())
                m = rep["metrics"]
                ids = {f["id"] for f in rep["findings"]}
                ranked = [f"{r['category']}/{r['kind']}" for r in rep["verdict"]["ranking"]]
                ranked = [r for r in ranked if r not in CROWDED]
                lines = (rep.get("extra", {}).get("false_sharing") or {}).get("lines") or []
                top = lines[0] if lines else {}
                row = {
                    "capture": i, "variant": name, "rc": rc, "wall_s": round(wall, 1),
                    "tool_cpu_s": round(cpu, 2),
                    "verdict": f"{rep['verdict']['primary']}/{rep['verdict']['kind']}",
                    "first_but_crowding": ranked[0] if ranked else "none",
                    "false_sharing": "memory_bandwidth.false_sharing_regs" in ids,
                    "true_sharing": "memory_bandwidth.true_sharing" in ids,
                    "offsets": [f["offset"] for f in top.get("fields", [])],
                    "threads": len(top.get("threads", [])),
                    "share": m.get("false_sharing_top_share") or m.get("true_sharing_top_share"),
                    "samples": (rep.get("extra", {}).get("false_sharing") or {}).get("samples"),
                    "host_foreign_cpu_share": m.get("host_foreign_cpu_share"),
                    "loadavg": loadavg(),
                }  # fmt: skip
                rows.append(row)
                append_row(path, row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    summarise_diagnosed(rows, names)


def summarise_diagnosed(rows: list[dict], names: list[str]) -> None:
    print(
        "| variant | captures | false-sharing finding | true-sharing finding | verdicts "
        "| first after crowding | top line's offsets (threads) | samples, median "
        "| other processes' CPU share, median |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        sel = [r for r in rows if r["variant"] == name]
        verdicts = ", ".join(f"{v} x{n}" for v, n in Counter(r["verdict"] for r in sel).items())
        after = ", ".join(
            f"{v} x{n}" for v, n in Counter(r.get("first_but_crowding", "?") for r in sel).items()
        )
        shapes = ", ".join(
            f"{o} ({t}) x{n}"
            for (o, t), n in Counter((str(r["offsets"]), r["threads"]) for r in sel).items()
        )
        print(f"| {name} | {len(sel)} | {sum(r['false_sharing'] for r in sel)}/{len(sel)} "
              f"| {sum(r['true_sharing'] for r in sel)}/{len(sel)} | {verdicts} | {after} "
              f"| {shapes} | {stat([r['samples'] for r in sel]).fmt('.0f')} "
              f"| {stat([r['host_foreign_cpu_share'] for r in sel]).fmt('.2f')} |")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks false-sharing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("what", choices=["throughput", "diagnose"])
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"of: {', '.join(VARIANTS)}")
    p.add_argument("--rounds", type=int, default=5, help="throughput: rounds")
    p.add_argument("--seconds", type=float, default=5.0, help="throughput: seconds per run")
    p.add_argument("--captures", type=int, default=5, help="diagnose: captures per variant")
    p.add_argument("--duration", type=int, default=10, help="diagnose: capture seconds")
    p.add_argument("--summarise", type=Path, help="diagnose: print the table of a raw-rows file")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        sys.exit(f"unknown variant(s): {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    if args.summarise:
        rows = [json.loads(x) for x in args.summarise.read_text().splitlines()]
        summarise_diagnosed(rows, list(dict.fromkeys(r["variant"] for r in rows)))
        return
    print(f"# machine: {machine_line()}", file=sys.stderr)
    if args.what == "throughput":
        throughput(args.rounds, args.seconds, names)
    else:
        diagnosed(args.captures, args.duration, names)
    print(f"load average at the end: {loadavg()}")


if __name__ == "__main__":
    main()
