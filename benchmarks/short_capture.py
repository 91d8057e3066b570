"""A short capture, end to end: time to verdict and what perf recorded, per diagnose tree.

``diagnose attach PID -d SECONDS`` (defaults otherwise) on one running sample service,
``--reps`` times per tree, the trees alternating in a rotating order. A tree is a
directory holding a ``diagnose`` package (``--tree NAME=PATH``, repeatable; default: this
checkout). To compare with another commit, export it first, e.g.::

    git archive main | (mkdir -p /tmp/diagnose-main && tar -x -C /tmp/diagnose-main)
    python -m benchmarks short-capture --tree main=/tmp/diagnose-main --tree this=.

Per capture: the time from the command's start to the moment it prints its verdict
(``verdict_s``: the time to verdict; the HTML page is rendered after it) and to its exit
(``wall_s``), and from its manifest when the measured window opened
(``window_start_s``: 0 for trees that count the window from the start), the window
(``duration_actual``), the conversion afterwards (``finish_s``), the rest (analysis and
reports), and what perf recorded (samples, status). Each tree is byte-compiled first
(``compileall``), as ``pip install`` leaves an installed diagnose: a checkout run where
``PYTHONDONTWRITEBYTECODE`` is set (this host's environment) compiles every module it
imports again in each capture, 0.1-0.15 s of its start-up and as much in its worker
captures' and its analysis. The perf probe's cache
(``~/.cache/diagnose/perf-probe.json``) is left as it is: run ``diagnose doctor`` first
for a warm cache, or pass ``--cold`` to delete it before every capture.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from benchmarks.common import (
    PYTHON,
    ROOT,
    Service,
    append_row,
    loadavg,
    machine_line,
    results_file,
    stat,
)
from benchmarks.zoo import all_samples, running, start_load
from diagnose.app.service import window_cores


class _HasPid(Protocol):
    @property
    def pid(self) -> int: ...


def one(
    tree: Path, pid: int, seconds: float, out: Path, cold: bool, keep: Path | None = None
) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    if cold:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        (cache / "diagnose" / "perf-probe.json").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    argv = [PYTHON, "-m", "diagnose", "attach", str(pid), "-d", f"{seconds:g}", "-o", str(out)]
    t = time.monotonic()
    verdict_at = None
    # run from the tree: ``python -m`` puts the working directory first on sys.path
    with (
        tempfile.TemporaryFile("w+") as err,
        subprocess.Popen(argv, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=err,
                         text=True) as proc,
    ):  # fmt: skip
        timer = threading.Timer(seconds * 10 + 120, proc.kill)
        timer.start()
        assert proc.stdout is not None
        for line in proc.stdout:  # the moment the verdict is printed, not the exit
            if verdict_at is None and line.startswith("Verdict:"):
                verdict_at = time.monotonic() - t
        proc.wait()
        timer.cancel()
        err.seek(0)
        stderr = err.read()
    wall = time.monotonic() - t
    row: dict[str, Any] = {"rc": proc.returncode, "wall_s": round(wall, 2)}
    row["verdict_s"] = None if verdict_at is None else round(verdict_at, 2)
    try:
        man = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        row["error"] = stderr.strip().splitlines()[-1:] or ["no manifest"]
        return row
    cap = man["capture"]
    perf = man["collectors"].get("perf", {})
    pdet = perf.get("details") or {}
    row.update(
        started_s=round(cap["monotonic_start"] - t, 2),  # diagnose's own start-up
        window_start_s=cap.get("window_start_s", 0.0),
        duration_actual=cap.get("duration_actual"),
        finish_s=cap.get("finish_s"),
        perf_status=perf.get("status"),
        perf_samples=pdet.get("samples"),
        perf_recording_s=pdet.get("recording_s"),
        perf_mb=round((pdet.get("recorded_bytes") or 0) / 2**20, 3),
        probe_cached_s=(pdet.get("probe") or {}).get("cached_s"),
        # each collector's conversion after the window (side by side: finish_s is the longest)
        finish_by={
            name: rec["details"]["finish_s"]
            for name, rec in man["collectors"].items()
            if isinstance((rec.get("details") or {}).get("finish_s"), (int, float))
        },
        finish_cpu_by={  # the CPU each conversion's thread used (its helpers not counted)
            name: rec["details"]["finish_cpu_s"]
            for name, rec in man["collectors"].items()
            if isinstance((rec.get("details") or {}).get("finish_cpu_s"), (int, float))
        },
    )
    row["report_s"] = round(
        wall - row["started_s"] - row["window_start_s"] - (row["duration_actual"] or 0)
        - (row["finish_s"] or 0), 2,
    )  # fmt: skip
    try:
        rep = json.loads((out / "report.json").read_text())
        row["verdict"] = f"{rep['verdict']['primary']}/{rep['verdict'].get('kind')}"
        row["tool_cpu_cores"] = rep["metrics"].get("tool_cpu_cores")
        row["tool_window_cores"] = window_cores(rep["capture"].get("tool_cpu_parts"))
        service = rep.get("service") or {}
        if service.get("verdict"):  # several workers captured: the service's, and all of it
            sv = service["verdict"]
            row["verdict"] = f"{sv['primary']}/{sv.get('kind')}"
            row["workers"] = len(service.get("workers") or [])
            row["tool_cpu_cores"] = service.get("tool_cpu_cores")
            row["tool_window_cores"] = service.get("tool_cpu_window_cores")
    except (OSError, ValueError, KeyError):
        row["verdict"] = None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        kept = keep / f"{tree.name}-{time.strftime('%H%M%S')}"
        shutil.move(str(out), kept)
        row["bundle"] = str(kept)
    shutil.rmtree(out, ignore_errors=True)
    return row


@contextlib.contextmanager
def _service(name: str, tmp: Path, seconds: float) -> Iterator[_HasPid]:
    """The sample running (a zoo sample with its locust load), warmed up."""
    zoo = {s.name: s for s in all_samples()}
    if name not in zoo:
        with Service(name, [], tmp / "ends.txt", seconds=seconds) as svc:
            time.sleep(2.0)  # warm-up
            yield svc
        return
    with running(zoo[name], None, tmp / "zoo") as run:
        load = start_load(run, seconds, tmp / "zoo")
        try:
            time.sleep(8.0)  # locust's users start, the service warms up
            yield run
        finally:
            load.stop()


def summarise(rows: list[dict[str, Any]], trees: list[str]) -> str:
    cols = ("verdict_s", "wall_s", "started_s", "window_start_s", "duration_actual", "finish_s", "report_s",
            "perf_samples", "tool_cpu_cores", "tool_window_cores")  # fmt: skip
    lines = [
        "| tree | captures | " + " | ".join(cols) + " | perf ok | verdicts |",
        "|---|---|" + "---|" * len(cols) + "---|---|",
    ]
    for name in trees:
        sel = [r for r in rows if r["tree"] == name]
        cells = []
        for c in cols:
            vals = [r[c] for r in sel if isinstance(r.get(c), (int, float))]
            cells.append(stat(vals).fmt(".2f") if vals else "-")
        ok = sum(1 for r in sel if r.get("perf_status") == "ok")
        verdicts = sorted({str(r.get("verdict")) for r in sel})
        lines.append(
            f"| {name} | {len(sel)} | " + " | ".join(cells) + f" | {ok}/{len(sel)} "
            f"| {', '.join(verdicts)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks short-capture", description=__doc__)
    p.add_argument("--tree", action="append", default=[], help="NAME=PATH (repeatable)")
    p.add_argument(
        "--sample",
        default="lock_contention",
        help="a hand-written sample (samples/NAME.py) or a zoo sample (samples/services/NAME, "
        "run with its locust load)",
    )
    p.add_argument("--seconds", type=float, default=4.0, help="-d of each capture (4)")
    p.add_argument("--reps", type=int, default=5, help="captures per tree (5)")
    p.add_argument("--cold", action="store_true", help="no cached perf probe in any capture")
    p.add_argument("--keep", type=Path, help="keep each capture's bundle under this folder")
    p.add_argument("--summarise", type=Path, help="print the table of a raw-rows file, no runs")
    args = p.parse_args(argv)
    if args.summarise:
        rows = [json.loads(x) for x in args.summarise.read_text().splitlines()]
        print(summarise(rows, list(dict.fromkeys(r["tree"] for r in rows))))
        return
    trees = dict(t.split("=", 1) for t in args.tree) or {"this": str(ROOT)}
    for name, path in trees.items():
        if not (Path(path) / "diagnose" / "__init__.py").is_file():
            sys.exit(f"--tree {name}={path}: no diagnose package there")
    names = list(trees)
    for tree in trees.values():  # as pip install leaves it (module docstring)
        subprocess.run([PYTHON, "-m", "compileall", "-q", str(Path(tree) / "diagnose")],
                       check=False, stdout=subprocess.DEVNULL)  # fmt: skip
    path = results_file("short-capture")
    print(f"# machine: {machine_line()}", file=sys.stderr)
    print(f"# raw rows: {path}", file=sys.stderr)
    rows = []
    budget = (args.seconds * 10 + 60) * args.reps * len(names) + 60
    with (
        tempfile.TemporaryDirectory(prefix="bench-short-") as tmp,
        _service(args.sample, Path(tmp), budget) as svc,
    ):
        for r in range(args.reps):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                row = {"round": r, "tree": name, "loadavg": loadavg()}
                row.update(
                    one(
                        Path(trees[name]),
                        svc.pid,
                        args.seconds,
                        Path(tmp) / "b",
                        args.cold,
                        args.keep,
                    )
                )
                rows.append(row)
                append_row(path, row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(f"load average at the end: {loadavg()}")
    print(summarise(rows, names))


if __name__ == "__main__":
    main()
