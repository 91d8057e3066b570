"""The time from the end of a capture to its verdict: collectors convert their outputs side by
side, and the scheduler trace's conversion stops at its event budget. Hand-built collectors
and perf's real text output (tests/fixtures/perf); the real collectors: tests/e2e."""

from __future__ import annotations

import csv
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.bundle.writer import BundleWriter
from diagnose.collect import child as child_module
from diagnose.collect import session
from diagnose.collect.base import CaptureContext, CaptureOptions, Collector
from diagnose.collect.perf import sched
from diagnose.collect.perf.record import perf_script
from diagnose.errors import OutputError
from diagnose.formats.perf_sched import SchedSummary
from tests.conftest import FIXTURES

SCRIPT = FIXTURES / "perf" / "sched-lock.script.txt"  # 400 events of a lock-bound target


class Meeting(Collector):
    """Finishes only once every other Meeting has started finishing too."""

    def __init__(self, name: str, barrier: threading.Barrier, fail: Exception | None = None):
        self.name = name
        self.barrier = barrier
        self.fail = fail

    def start(self, ctx: CaptureContext) -> None:
        pass

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        self.barrier.wait(timeout=10)  # BrokenBarrierError when run one after the other
        if self.fail is not None:
            raise self.fail
        return self.record(CollectorStatus.OK, files=[f"{self.name}.csv"])


def context(writer: BundleWriter | None = None, duration: float = 10.0) -> CaptureContext:
    t0 = 3298.0 if writer is not None else time.monotonic()  # the fixture's clock
    return CaptureContext(
        target=SimpleNamespace(pid=1),  # type: ignore[arg-type]
        writer=writer,  # type: ignore[arg-type]
        options=CaptureOptions(duration=duration),
        t0=t0,
        deadline=t0 + duration,
    )


def test_collectors_finish_side_by_side_and_keep_their_order():
    barrier = threading.Barrier(3)
    running: list[Collector] = [Meeting(n, barrier) for n in ("pyspy", "perf", "perf_sched")]
    records: dict[str, CollectorRecord] = {}
    assert session._finish_collectors(context(), running, records)
    assert list(records) == ["pyspy", "perf", "perf_sched"]
    assert all(r.status == CollectorStatus.OK for r in records.values()), records
    assert all(r.details["finish_s"] >= 0 for r in records.values())


def test_a_full_disk_or_a_crash_while_finishing_is_that_collectors_record_alone():
    barrier = threading.Barrier(3)
    running: list[Collector] = [
        Meeting("pyspy", barrier),
        Meeting("perf", barrier, OutputError("no space left on device")),
        Meeting("perf_sched", barrier, ValueError("bad line")),
    ]
    records: dict[str, CollectorRecord] = {}
    assert not session._finish_collectors(context(), running, records)  # the disk filled up
    assert records["pyspy"].status == CollectorStatus.OK
    assert records["perf"].status == CollectorStatus.FAILED
    assert "no space left" in records["perf"].reason
    assert records["perf_sched"].reason == "internal error while finishing: ValueError: bad line"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_scheduler_trace_converts_its_first_budget_events_only(tmp_path: Path):
    lines = SCRIPT.read_text().splitlines(keepends=True)
    whole, cut = SchedSummary(), SchedSummary()
    ctx_whole = context(BundleWriter.create(tmp_path / "whole"))
    ctx_cut = context(BundleWriter.create(tmp_path / "cut"))
    counts_whole = sched.write_tables(ctx_whole, iter(lines), whole, budget=None)
    counts_cut = sched.write_tables(ctx_cut, iter(lines), cut, budget=150)
    assert whole.events == 400 and not whole.cut
    assert cut.events == 150 and cut.cut
    assert cut.last_t is not None and whole.last_t is not None and cut.last_t < whole.last_t
    # the cut tables are the whole one's rows up to the cut (rows open there end unknown)
    rows_whole = _rows(tmp_path / "whole" / "sched" / "offcpu.csv")
    rows_cut = _rows(tmp_path / "cut" / "sched" / "offcpu.csv")
    assert 0 < len(rows_cut) < len(rows_whole)
    assert (counts_cut["offcpu_rows"], counts_whole["offcpu_rows"]) == (
        len(rows_cut),
        len(rows_whole),
    )
    end = cut.last_t - ctx_cut.t0
    assert all(float(r["t"]) <= end + 1e-6 for r in rows_cut)
    done = [r for r in rows_cut if r["dur"]]
    by_start = {(r["t"], r["tid"]): r["dur"] for r in rows_whole}
    assert done and all(by_start[(r["t"], r["tid"])] == r["dur"] for r in done)


def test_a_budget_the_trace_fits_in_changes_nothing(tmp_path: Path):
    lines = SCRIPT.read_text().splitlines(keepends=True)
    a, b = SchedSummary(), SchedSummary()
    sched.write_tables(context(BundleWriter.create(tmp_path / "a")), iter(lines), a, None)
    sched.write_tables(context(BundleWriter.create(tmp_path / "b")), iter(lines), b, 400)
    assert not b.cut and b.events == a.events == 400
    for name in ("offcpu.csv", "futex.csv", "stacks.csv", "offcpu.folded"):
        assert (tmp_path / "a" / "sched" / name).read_bytes() == (
            tmp_path / "b" / "sched" / name
        ).read_bytes(), name


def test_the_event_budget_grows_with_the_window():
    assert sched.event_budget(1.0) == sched.MIN_EVENTS
    # 10 s of a lock sample (117,000-125,000 events) is cut to about a quarter, never to
    # less (the accuracy bundles judged again kept every verdict at 30,000)
    assert 30_000 <= sched.event_budget(10.0) < 117_000
    assert sched.event_budget(60.0) == 60 * sched.EVENTS_PER_S > sched.MIN_EVENTS


def test_a_reader_that_stops_early_ends_perf_script_through_its_pipe(tmp_path: Path, monkeypatch):
    # a perf script that ignores SIGINT and writes for ever: stopped by the closed pipe
    # (SIGPIPE) at once, not by SIGKILL after SIGINT's grace, as when the pipe was closed last
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\ntrap '' INT\nwhile :; do echo 'line'; done\n")
    fake.chmod(0o755)
    ends: list[int] = []
    stop = child_module.Child.stop

    def recorded_stop(self: child_module.Child, grace: float = 5.0) -> int:
        ends.append(stop(self, grace))
        return ends[-1]

    monkeypatch.setattr(child_module.Child, "stop", recorded_stop)
    ctx = context(BundleWriter.create(tmp_path / "b"))
    lines = perf_script(ctx, str(fake), tmp_path / "x", "tid", [], "script.stderr", 60.0)
    assert [next(lines) for _ in range(3)] == ["line\n"] * 3
    lines.close()
    assert ends == [-signal.SIGPIPE]
