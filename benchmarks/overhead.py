"""What a capture costs the target: its own throughput alone and under each profiler.

Each run starts a sample service in its own session (``--timestamps``: it records the end
time of every request), lets it warm up, starts one variant in another session (nothing,
``diagnose attach`` at its defaults, ``py-spy record --nonblocking`` alone, ``perf record``
alone, ``py-spy record`` at its defaults, or diagnose with one collector), waits for it to
exit, then stops the service. The default variants are the floor comparison (issue 13):
alone, diagnose, py-spy --nonblocking, perf record; ``--variants all`` adds the others.
The throughput is counted in the same window of every run, inside every variant's
sampling: from ``WINDOW[0]`` to ``WINDOW[1]`` seconds after the variant was started
(diagnose starts its helpers within about a second and opens its window once they record,
``window_start_s``, 1.6-4 s on a busy host; it samples ``--duration`` s from there).
Variants alternate within each round, in a rotating order. The cost of a variant is
``1 - rps / rps(alone)`` in the same round; the figure is the median over rounds.

CPU: ``tool CPU s`` is everything the variant's process tree used, start to exit
(diagnose's conversion, analysis and reports included); ``cores while recording`` is, for
diagnose, the capture's own measure (``tool_cpu_cores``: diagnose and every helper during
the capture, from its proc sampler), for a lone profiler its CPU over its run.

diagnose's work after the capture (converting, analysing, rendering) runs while the target
still serves, so its throughput from the end of sampling to diagnose's exit is counted
too (``post``), against the same round's ``alone`` rate.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import (
    DIAGNOSE,
    PYTHON,
    Service,
    append_row,
    host_busy_s,
    loadavg,
    machine_line,
    process_cpu_s,
    results_file,
    run_timed,
    stat,
    thread_count,
)

#: name -> (sample, its arguments, seconds to warm up before the variant starts)
TARGETS: dict[str, tuple[str, list[str], float]] = {
    # about 4 threads: main, one Python tokeniser, two NumPy model workers
    "few": ("preprocess_tokenize", [], 3.0),
    # the same with 64 more threads that only wait (a server's idle pool): what a profiler
    # costs grows with the threads it reads, busy or not (issue 13)
    "few_idle": ("preprocess_tokenize", ["--idle-threads", "64"], 3.0),
    # 65 threads: 64 request threads on one model lock (mostly waiting), one running
    "many": ("lock_contention", ["--threads", "64"], 3.0),
    # onnxruntime with a large intra-op pool: 2 sessions x 32 threads (oversubscribed)
    "onnx": ("oversubscription", ["--threads", "2", "--intra-op", "32"], 5.0),
    # 2 native worker threads writing per-worker counters (a locked add per item)
    "fs_native": ("false_sharing_native", [], 1.0),
    # 2 Python request threads in a C library (GIL released) that counts into a NumPy array
    "fs_service": ("false_sharing_service", [], 2.5),
}
COLLECTORS = ("proc", "pyspy", "gil", "perf", "perf_sched", "false_sharing")
WINDOW = (1.5, 9.5)  # seconds after the variant starts; with duration 10 s
#: the scheduler trace's events, as collect/perf/sched.py records them
SCHED_EVENTS = ("-e", "sched:sched_switch/call-graph=fp/", "-e", "sched:sched_wakeup",
                "-e", "syscalls:sys_enter_futex", "-e", "syscalls:sys_exit_futex")  # fmt: skip
#: the default variants: diagnose against the floor, each profiler alone (issue 13, item 5)
FLOOR = ("alone", "diagnose", "py-spy --nonblocking", "perf record")


def pyspy_binary() -> str:
    found = shutil.which("py-spy", path=str(Path(PYTHON).parent)) or shutil.which("py-spy")
    if not found:
        sys.exit("py-spy is not installed")
    return found


def variants(duration: int) -> dict[str, Callable[[int, Path], list[str]]]:
    d = str(duration)
    pyspy = pyspy_binary()

    def attach(*extra: str) -> Callable[[int, Path], list[str]]:
        return lambda pid, out: [*DIAGNOSE, "attach", str(pid), "-d", d, "-o", str(out), *extra]

    def pyspy_alone(*extra: str) -> Callable[[int, Path], list[str]]:
        return lambda pid, out: [pyspy, "record", "--pid", str(pid), "--rate", "100", *extra,
                                 "--duration", d, "--output", str(out) + ".svg"]  # fmt: skip

    def perf_alone(*events: str, scope: str = "-p") -> Callable[[int, Path], list[str]]:
        return lambda pid, out: [
            "timeout", "-s", "INT", d, "perf", "record", *events, "--no-bpf-event", "-N",
            *([scope, str(pid)] if scope == "-p" else [scope]), "-o", str(out) + ".perf.data",
        ]  # fmt: skip

    out: dict[str, Callable[[int, Path], list[str]]] = {
        "alone": lambda pid, out: ["sleep", d],
        "diagnose": attach(),
        "py-spy --nonblocking": pyspy_alone("--nonblocking"),
        # the platform notes' perf: on-CPU stacks at 99 Hz with call graphs, for d seconds
        "perf record": lambda pid, out: [
            "timeout",
            "-s",
            "INT",
            d,
            "perf",
            "record",
            "-F",
            "99",
            "-g",
            "--no-bpf-event",
            "-N",  # no copies into ~/.debug (434 MB for libtorch_cpu.so), after the window
            "-p",
            str(pid),
            "-o",
            str(out) + ".perf.data",
        ],
        "py-spy": pyspy_alone(),
        # the same, CPU-wide (-a): per-CPU events, none switched with the target's threads
        "perf record -a": perf_alone("-F", "99", "-g", scope="-a"),
        # the scheduler trace's events (collect/perf/sched.py), per task and CPU-wide
        "perf sched": perf_alone(*SCHED_EVENTS),
        "perf sched -a": perf_alone(*SCHED_EVENTS, scope="-a"),
    }
    for c in COLLECTORS:
        out[f"only {c}"] = attach("--collectors", c)
    return out


def variant(name: str, known: dict[str, Callable[[int, Path], list[str]]], duration: int):
    """A known variant, or ``diagnose OPTIONS...``: attach at the defaults but for OPTIONS."""
    if name in known:
        return known[name]
    words = name.split()
    # "nice diagnose OPTIONS": diagnose and its helpers (py-spy, perf inherit it) at nice 10
    prefix = ["nice", "-n", "10"] if words[0] == "nice" else []
    words = words[1:] if prefix else words
    # "diagnose@CHECKOUT OPTIONS": another checkout's diagnose (a change, A/B in one run)
    program, _, checkout = words[0].partition("@") if words else ("", "", "")
    if program != "diagnose" or (checkout and not (Path(checkout) / "diagnose").is_dir()):
        sys.exit(
            f"unknown variant {name!r}: one of {', '.join(known)} or "
            "'[nice] diagnose[@CHECKOUT] OPTIONS'"
        )
    program_argv = DIAGNOSE
    if checkout:
        # first on the path: `python -m` would put the current directory (this checkout,
        # when run from its root) before PYTHONPATH
        where = str(Path(checkout).resolve())
        program_argv = ["env", f"PYTHONPATH={where}", PYTHON, "-c",
                        f"import runpy, sys; sys.path.insert(0, {where!r}); "
                        "runpy.run_module('diagnose', run_name='__main__')"]  # fmt: skip
    return lambda pid, out: [*prefix, *program_argv, "attach", str(pid), "-d", str(duration),
                             "-o", str(out), *words[1:]]  # fmt: skip


def one_run(
    target: str, variant: str, argv_of: Callable[[int, Path], list[str]], duration: int, tmp: Path
) -> dict:
    sample, args, warm = TARGETS[target]
    out = tmp / "bundle"
    shutil.rmtree(out, ignore_errors=True)
    with Service(sample, args, tmp / "ends.txt", seconds=600) as svc:
        time.sleep(warm)
        load = loadavg()
        threads = thread_count(svc.pid)
        host0, target0 = host_busy_s(), process_cpu_s(svc.pid)
        start = time.monotonic()
        rc, wall, cpu, rss = run_timed(argv_of(svc.pid, out), timeout=duration * 20 + 60)
        host1, target1 = host_busy_s(), process_cpu_s(svc.pid)
        svc.stop()
    row = {
        "target": target,
        "variant": variant,
        "rps": svc.rps(start + WINDOW[0], start + WINDOW[1]),
        "rc": rc,
        "wall_s": round(wall, 2),
        "tool_cpu_s": round(cpu, 2),
        "tool_rss_mb": round(rss / 1024, 1),
        "threads": threads,
        "target_cpu_s": round(target1 - target0, 2),
        # CPU that neither the target nor the variant used while the variant ran: the noise
        "other_cpu_s": round(host1 - host0 - (target1 - target0) - cpu, 2),
        "loadavg": load,
    }
    row["cores_recording"] = round(cpu / wall, 3) if wall > 0 else None
    with contextlib.suppress(OSError, ValueError, KeyError):
        rep = json.loads((out / "report.json").read_text())
        row["cores_recording"] = rep["metrics"]["tool_cpu_cores"]  # diagnose's own measure
    for leftover in (Path(str(out) + ".svg"), Path(str(out) + ".perf.data")):
        leftover.unlink(missing_ok=True)
    manifest = out / "manifest.json"
    if manifest.exists():
        man = json.loads(manifest.read_text())
        cap = man["capture"]
        # what the capture got: a cheaper variant that samples less is not cheaper for free
        details = {k: c.get("details") or {} for k, c in man.get("collectors", {}).items()}
        row["pyspy_samples"] = details.get("pyspy", {}).get("samples")
        row["proc_ticks"] = details.get("proc", {}).get("ticks")
        row["proc_late_ticks"] = details.get("proc", {}).get("late_ticks")
        sampled_until = cap["monotonic_start"] + duration
        row["started_s"] = round(cap["monotonic_start"] - start, 2)
        row["window_start_s"] = cap.get("window_start_s", 0.0)
        sampled_until += row["window_start_s"]
        row["post_s"] = round(start + wall - sampled_until, 2)
        row["post_rps"] = svc.rps(sampled_until, start + wall)
        row["bundle_mb"] = round(
            sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20, 2
        )
    shutil.rmtree(out, ignore_errors=True)
    return row


def _got(rows: list[dict], key: str, spec: str = ".0f") -> str:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return stat(vals).fmt(spec) if vals else ""


def summarise(rows: list[dict], targets: list[str], names: list[str]) -> str:
    lines = [
        "| target | variant | rps in window, median (range) | cost vs alone, median of rounds (range) "
        "| tool CPU s per run | cores while recording | other CPU s per run "
        "| after-capture: s, cost | py-spy samples | late /proc ticks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in targets:
        base = {r["round"]: r["rps"] for r in rows if r["target"] == t and r["variant"] == "alone"}
        for v in names:
            sel = [r for r in rows if r["target"] == t and r["variant"] == v]
            if not sel:
                continue
            cost = stat(
                [100 * (1 - r["rps"] / base[r["round"]]) for r in sel if r["round"] in base]
            )
            post = ""
            if any("post_rps" in r for r in sel):
                pc = stat([100 * (1 - r["post_rps"] / base[r["round"]]) for r in sel
                           if r["round"] in base and r.get("post_s", 0) > 0.2])  # fmt: skip
                ps = stat([r["post_s"] for r in sel])
                post = f"{ps.median:.1f} s, {pc.fmt('.1f', '%')}"
            threads = sel[0].get("threads")
            lines.append(
                f"| {t} ({threads} threads) | {v} | {stat([r['rps'] for r in sel]).fmt('.0f')} "
                f"| {'-' if v == 'alone' else cost.fmt('.1f', '%')} "
                f"| {stat([r['tool_cpu_s'] for r in sel]).fmt('.2f')} "
                f"| {_got(sel, 'cores_recording', '.3f')} "
                f"| {stat([r['other_cpu_s'] for r in sel]).fmt('.2f')} | {post} "
                f"| {_got(sel, 'pyspy_samples')} | {_got(sel, 'proc_late_ticks')} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks overhead", description=__doc__)
    p.add_argument("--targets", default="few,few_idle", help=f"of: {', '.join(TARGETS)}")
    p.add_argument(
        "--variants",
        default="floor",
        help=f"separated by commas, or by ';'; 'floor' (the default): {', '.join(FLOOR)}; "
        "'all': every known variant; '[nice] diagnose[@CHECKOUT] OPTIONS' attaches with those "
        "options (nice: at nice 10, its helpers too; @CHECKOUT: the diagnose package of that "
        "directory, to compare a change with this one in the same run)",
    )
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10, help="capture seconds (default 10)")
    p.add_argument("--summarise", type=Path, help="print the table of a raw-rows file, no runs")
    args = p.parse_args(argv)
    if args.summarise:
        rows = [json.loads(x) for x in args.summarise.read_text().splitlines()]
        ts = list(dict.fromkeys(r["target"] for r in rows))
        print(summarise(rows, ts, list(dict.fromkeys(r["variant"] for r in rows))))
        return
    targets = args.targets.split(",")
    all_variants = variants(args.duration)
    sep = ";" if ";" in args.variants else ","  # ';' when an option's value has commas
    if args.variants in ("all", "floor"):
        names = list(all_variants) if args.variants == "all" else list(FLOOR)
    else:
        names = args.variants.split(sep)
    if "alone" not in names:
        names.insert(0, "alone")
    path = results_file("overhead")
    print(f"# machine: {machine_line()}", file=sys.stderr)
    print(f"# raw rows: {path}", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmpdir:
        for r in range(args.rounds):
            for t in targets:
                order = names[r % len(names) :] + names[: r % len(names)]
                for v in order:
                    argv_of = variant(v, all_variants, args.duration)
                    row = {"round": r, **one_run(t, v, argv_of, args.duration, Path(tmpdir))}
                    rows.append(row)
                    append_row(path, row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    print(f"load average at the end: {loadavg()}")
    print(summarise(rows, targets, names))


if __name__ == "__main__":
    main()
