"""diagnose attach against real processes: what the bundle records."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from diagnose.bundle import Bundle
from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import capture
from tests.conftest import ROOT, pyenv_python

TARGET = ROOT / "tests" / "targets" / "states.py"


def start_states(python: str = sys.executable, *extra: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [python, str(TARGET), "--seconds", "30", "--late", "1.5", *extra],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", line
    return proc


def threads_by_name(bundle: Bundle) -> dict[str, int]:
    names = pd.read_csv(bundle.path("python/threads.csv"))
    return {str(n): int(t) for t, n in zip(names["tid"], names["name"], strict=True)}


@pytest.fixture(scope="module")
def states_bundle(tmp_path_factory) -> Bundle:
    out = tmp_path_factory.mktemp("b") / "bundle"
    proc = start_states()
    try:
        capture(proc.pid, out, CaptureOptions(duration=4))
    finally:
        proc.kill()
        proc.wait()
    return Bundle.open(out)


def test_manifest_lists_every_collector_with_a_status(states_bundle):
    m = states_bundle.manifest
    assert m.state == "complete"
    assert m.capture.ended_by == "duration"
    for name in ("system", "proc", "pyspy", "gil"):
        assert m.collectors[name].status.value == "ok", (name, m.collectors[name].reason)
        for f in m.collectors[name].files:
            assert states_bundle.has(f), f
    assert m.target.is_python is True


def test_the_tools_own_cpu_is_measured_by_part_over_the_window(states_bundle):
    details = states_bundle.manifest.collectors["proc"].details
    parts = details["tool_cpu_parts_s"]
    # py-spy read the stacks and the sampler read /proc while the window was open
    assert parts.get("py-spy trace", 0.0) > 0 and parts.get("diagnose proc", 0.0) > 0, parts
    assert 3.5 <= details["tool_cpu_parts_span_s"] <= 6.0
    # the parts are a share of what the sampler's running total says diagnose used
    total = pd.read_csv(states_bundle.path("proc/process.csv"))["tool_cpu_s"].dropna()
    assert sum(parts.values()) <= total.iloc[-1] - total.iloc[0] + 0.05


def test_spinning_thread_is_running_with_rising_utime(states_bundle):
    tid = threads_by_name(states_bundle)["spinner"]
    df = pd.read_csv(states_bundle.path("proc/threads.csv"))
    mine = df[df["tid"] == tid].sort_values("t")
    # half the ticks of the 4 s window at least (ticks come late on a loaded host), at the
    # rate the CPU budget chose (5-20 Hz on this target)
    rate = states_bundle.manifest.collectors["proc"].details["rate_hz"]
    assert len(mine) >= rate * 2
    assert (mine["state"] == "R").mean() > 0.5
    assert mine["utime"].iloc[-1] > mine["utime"].iloc[0]
    assert mine["oncpu_ns"].is_monotonic_increasing


def test_three_waiters_share_one_futex_address(states_bundle):
    names = threads_by_name(states_bundle)
    waiters = [names[f"waiter-{i}"] for i in range(3)]
    df = pd.read_csv(states_bundle.path("proc/threads.csv"), dtype={"arg0": str})
    w = df[df["tid"].isin(waiters)]
    assert set(w["syscall"].dropna().astype(int)) == {202}
    addresses = w.groupby("tid")["arg0"].agg(lambda s: s.mode().iloc[0])
    assert addresses.nunique() == 1, addresses
    assert all(wc.startswith("futex") for wc in w["wchan"].dropna())


def test_thread_started_mid_capture_appears(states_bundle):
    tid = threads_by_name(states_bundle)["late"]
    df = pd.read_csv(states_bundle.path("proc/threads.csv"))
    first_seen = df[df["tid"] == tid]["t"].min()
    assert 1.0 < first_seen < 3.5


def test_bundle_files_are_private(states_bundle):
    for p in Path(states_bundle.root).rglob("*"):
        mode = p.stat().st_mode & 0o777
        assert mode & 0o077 == 0, (p, oct(mode))


def test_report_recomputes_from_the_bundle_alone(states_bundle, tmp_path):
    out = tmp_path / "r.json"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "diagnose",
            "report",
            str(states_bundle.root),
            "--format",
            "json",
            "-o",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    rep = json.loads(out.read_text())
    assert rep["schema"] == "diagnose.report/1"
    assert set(rep["verdict"]) >= {"primary", "kind", "confidence", "ranking"}
    # the lock held by a sleeping holder, with three waiters, is the lock hot spot
    assert rep["metrics"]["lock_top_waiters"] == 3
    assert "waiter" in rep["metrics"]["lock_top_site"]


@pytest.mark.parametrize("version", ["3.9", "3.10", "3.11", "3.12", "3.13"])
def test_python_versions(version, tmp_path):
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed under pyenv")
    proc = start_states(python)
    try:
        res = capture(proc.pid, tmp_path / "b", CaptureOptions(duration=2.5))
    finally:
        proc.kill()
        proc.wait()
    b = Bundle.open(res.bundle)
    assert b.manifest.collectors["pyspy"].status.value == "ok", b.manifest.collectors[
        "pyspy"
    ].reason
    names = threads_by_name(b)
    assert {"spinner", "holder", "waiter-0"} <= set(names)
    assert b.manifest.target.python_version == version
    system = b.json("system.json")
    assert system["python"]["runtime"] is not None  # the GIL's address range was found


def test_pyspy_lowers_its_rate_to_fit_the_cpu_budget_unless_a_rate_is_given(tmp_path):
    """Within diagnose's CPU budget py-spy samples at a rate its cost (threads x rate)
    affords, and at the rate asked for when --rate is given.

    The default budget's rates are tests/unit/test_budget.py's. Here a budget of a
    thousandth of a core puts py-spy at its 10 Hz floor on 5 threads: a tenth of the
    100 Hz asked for. Few threads, so that 100 Hz stays within what py-spy can sample on a
    saturated 2-core host (there it made 47 ticks of 25 threads in a 2.5 s window at 100 Hz
    as at 10 Hz: 1175 thread-samples each)."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "samples" / "lock_contention.py"), "--threads", "4",
         "--seconds", "30"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = 100
        while len(list(Path(f"/proc/{proc.pid}/task").iterdir())) < 5 and deadline:
            deadline -= 1
            time.sleep(0.1)
        threads = len(list(Path(f"/proc/{proc.pid}/task").iterdir()))
        auto = capture(proc.pid, tmp_path / "auto", CaptureOptions(duration=2.5, cpu_budget=0.001))
        chosen = capture(
            proc.pid,
            tmp_path / "chosen",
            CaptureOptions(duration=2.5, cpu_budget=0.001, rate_chosen=True),
        )
    finally:
        proc.kill()
        proc.wait()
    d = Bundle.open(auto.bundle).manifest.collectors["pyspy"].details
    assert d["rate_hz"] == 10
    assert f"{threads} threads" in d["rate_note"] and "0.001 cores" in d["rate_note"]
    budget = Bundle.open(auto.bundle).manifest.capture.cpu_budget
    assert budget is not None and "py-spy 100 -> 10 Hz" in budget["thinned"]
    # about rate x threads x the seconds py-spy ran: it started after the capture did and
    # was stopped at the window's end (recording_s[1]). Not the seconds its samples covered:
    # py-spy's timer (src/timer.rs) keeps a schedule from its start and takes the ticks it
    # missed back to back, so a py-spy slow to attach on a loaded host made 50 ticks in
    # 3.91 s covered. Its intervals are exponential (a Poisson count: ~47 +- 7 ticks in
    # 4.7 s), hence 1.5x; 100 Hz would be 6-10x
    assert d["samples"] <= 1.5 * 10 * threads * (d["recording_s"][1] + 0.5)
    c = Bundle.open(chosen.bundle).manifest.collectors["pyspy"].details
    assert c["rate_hz"] == 100 and "rate_note" not in c

    # 10 times the rate: 13-15 times the samples at a load average of 8 (25 threads). Per
    # second py-spy ran from its start (recording_s[0]: on a saturated host it starts
    # seconds before a window that waits for perf, so the two captures' spans differ)
    def per_s(x: dict) -> float:
        return float(x["samples"]) / max(0.5, x["recording_s"][1] - (x["recording_s"][0] or 0))

    assert per_s(c) > 3 * per_s(d)


def test_pyspy_measured_over_its_budget_is_lowered_mid_capture_unless_a_rate_is_given(tmp_path):
    """The plan's per-sample cost is for shallow stacks; on deep ones py-spy costs many times
    more (600 frames: about 1 core at 53 Hz here). Its cost is measured 2 s into sampling
    and its rate lowered to what the budget leaves it, py-spy restarted at that rate; a rate
    the user chose stays, whatever it costs."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "targets" / "deep_stacks.py"), "--depth", "400"],
        stdout=subprocess.PIPE,
        text=True,
    )
    only = ("proc", "pyspy", "gil")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        auto = capture(proc.pid, tmp_path / "auto", CaptureOptions(duration=6, collectors=only))
        chosen = capture(
            proc.pid,
            tmp_path / "chosen",
            CaptureOptions(duration=6, collectors=only, rate=50, rate_chosen=True),
        )
    finally:
        proc.kill()
        proc.wait()
    b = Bundle.open(auto.bundle)
    d = b.manifest.collectors["pyspy"].details
    (_, first), (at, lowered) = d["rates_hz"]
    assert lowered < first and d["rate_hz"] == lowered and d["chunks"] == 2
    # measured after REPLAN_AFTER_S of sampling, with REPLAN_MIN_LEFT_S of the window ahead
    assert 2.0 <= at <= d["recording_s"][1] - 2.5
    budget = b.manifest.capture.cpu_budget
    assert budget is not None and budget["rates_hz"]["pyspy"] == lowered
    assert any("measured" in t and f"{first} Hz" in t for t in budget["thinned"])
    assert d["measured_cores"] > budget["budget_cores"]
    assert "measured" in d["rate_note"]
    # the stacks of both chunks are in the tables: the deep threads seen after the restart
    iv = b.table("python/intervals.csv", ["tid", "start", "end"])
    assert iv["end"].max() > at + 1.0
    c = Bundle.open(chosen.bundle).manifest.collectors["pyspy"].details
    assert c["rate_hz"] == 50 and "rates_hz" not in c and c["chunks"] == 1


def test_tables_parquet_rewrites_the_tables_and_the_report_reads_them(tmp_path):
    # GIVEN a capture asked to keep its large tables as Parquet whatever their size
    out = tmp_path / "bundle"
    proc = start_states()
    try:
        capture(proc.pid, out, CaptureOptions(duration=2, tables="parquet"))
    finally:
        proc.kill()
        proc.wait()
    bundle = Bundle.open(out)
    tables = bundle.manifest.capture.tables
    assert tables is not None and tables["format"] == "parquet" and not tables["kept"], tables
    # THEN the /proc table is Parquet only, and the collector's list of files says so
    assert "proc/threads.csv" in tables["parquet"]
    assert (out / "proc" / "threads.parquet").is_file()
    assert not (out / "proc" / "threads.csv").exists()
    assert "proc/threads.parquet" in bundle.manifest.collectors["proc"].files
    # AND the report reads it: the spinning thread is seen running, the threads blocked on
    # the lock are not ("late" may spin too, sharing the GIL with it)
    res = subprocess.run(
        [sys.executable, "-m", "diagnose", "report", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    report = json.loads((out / "report.json").read_text())
    running = {t.get("name"): t["shares"]["running"] for t in report["threads"]}
    blocked = [running[n] for n in ("holder", "waiter-0", "waiter-1", "waiter-2")]
    assert running["spinner"] > 0.1 and running["spinner"] > 5 * max(blocked), running


def test_a_capture_not_judged_after_skips_the_analysis_imports(tmp_path):
    # GIVEN a running target, captured briefly with and without --no-report (a worker's
    # capture is --no-report: its finish shares the cores with its service's)
    proc = start_states()
    try:
        imported = {}
        for mode in ("--no-report", "--report"):
            argv = [sys.executable, "-X", "importtime", "-m", "diagnose", "attach",
                    str(proc.pid), "-d", "1", "--collectors", "proc",
                    "-o", str(tmp_path / mode.strip("-"))]  # fmt: skip
            if mode == "--no-report":
                argv.append(mode)
            run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
            assert run.returncode == 0, run.stderr[-2000:]
            imported[mode] = {
                line.rsplit("|", 1)[-1].strip()
                for line in run.stderr.splitlines()
                if line.startswith("import time:")
            }
    finally:
        proc.kill()
        proc.wait()
    # THEN pandas (0.5 CPU-s to import) is imported only where the bundle is judged
    assert "pandas" in imported["--report"]
    assert "pandas" not in imported["--no-report"]
