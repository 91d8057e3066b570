"""The scheduler trace's size cap from its event budget (collect/perf/sched.py), with
hand-built stand-ins for the recording: no perf is run here."""

from __future__ import annotations

from dataclasses import dataclass

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


def test_the_cap_is_what_the_event_budget_needs():
    assert sched.budget_bytes(10.0) == sched.event_budget(10.0) * sched.BYTES_PER_EVENT
    assert sched.budget_bytes(10.0) == 30_000 * 200  # 6 MB for a default window
    assert sched.budget_bytes(60.0) == 180_000 * 200  # grows with the window


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
