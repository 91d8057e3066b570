"""The scheduler trace's size cap from its event budget (collect/perf/sched.py), with
hand-built stand-ins for the recording: no perf is run here."""

from __future__ import annotations

from dataclasses import dataclass

from diagnose.collect.base import CaptureOptions
from diagnose.collect.perf import sched


@dataclass
class _Rec:
    """What the collector's progress line reads of a perf recording."""

    max_bytes: int
    is_running: bool
    was_capped: bool

    def running(self) -> bool:
        return self.is_running

    def capped(self) -> bool:
        return self.was_capped


def _collector(rec: _Rec, by_budget: bool) -> sched.PerfSchedCollector:
    c = sched.PerfSchedCollector()
    c.rec = rec  # type: ignore[assignment]
    c.by_budget = by_budget
    return c


def test_the_budget_grows_with_the_duration_asked_for():
    assert sched.capture_budget(CaptureOptions()) == 30_000  # 6 MB at 200 bytes an event
    assert sched.capture_budget(CaptureOptions(duration=60.0)) == 180_000
    assert sched.capture_budget(CaptureOptions(duration=60.0, sched_events=5_000)) == 5_000


def test_captures_side_by_side_share_the_budget():
    # a service's two workers convert 15,000 events each: as much as one capture in all
    assert sched.event_budget(10.0, captures=2) == 15_000
    assert sched.event_budget(60.0, captures=3) == 60_000
    # near misses: one capture keeps the whole; a share has a floor
    assert sched.event_budget(10.0, captures=1) == sched.event_budget(10.0) == 30_000
    assert sched.event_budget(10.0, captures=4) == sched.MIN_SHARED_EVENTS == 10_000


def test_progress_says_the_trace_ended_at_its_budget():
    rec = _Rec(12_000_000, is_running=False, was_capped=True)
    assert (
        _collector(rec, by_budget=True).progress() == "perf_sched done (its event budget's 11 MB)"
    )


def test_progress_near_misses():
    # still recording; stopped by the window (not the cap); capped by the disk's share
    assert _collector(_Rec(12_000_000, True, False), True).progress() == "perf_sched recording"
    assert _collector(_Rec(12_000_000, False, False), True).progress() == "perf_sched done"
    assert _collector(_Rec(12_000_000, False, True), False).progress() == "perf_sched done"
