"""The measured window opens once every collector records: hand-built collectors that say
when they began (a perf that takes seconds to start, one that never says), no helpers.
The real ones: tests/e2e/test_perf.py (perf's first sample after its window opened)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect import session
from diagnose.collect.base import CaptureContext, CaptureOptions, Collector


class Fake(Collector):
    def __init__(self, name: str, slow: bool, ready_after: float | None) -> None:
        self.name = name
        self.slow_start = slow
        self.ready_after = ready_after  # seconds after the first wait; None: never
        self.first_wait: float | None = None
        self.waits: list[float] = []

    def start(self, ctx: CaptureContext) -> None:
        pass

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        return self.record(CollectorStatus.OK)

    def wait_recording(self, until: float) -> float | None:
        now = time.monotonic()
        self.waits.append(until)
        self.first_wait = self.first_wait or now
        if self.ready_after is None:
            time.sleep(max(0.0, min(until - now, 0.05)))
            return None
        at = self.first_wait + self.ready_after
        if at > until:
            time.sleep(max(0.0, until - now))
            return None
        time.sleep(max(0.0, at - now))
        return at


def context(duration: float = 4.0) -> CaptureContext:
    t0 = time.monotonic()
    opts = CaptureOptions(duration=duration)
    return CaptureContext(
        target=SimpleNamespace(pid=1),  # type: ignore[arg-type]
        writer=None,  # type: ignore[arg-type]
        options=opts,
        t0=t0,
        deadline=t0 + session.READY_TIMEOUT + duration,
    )


def test_the_window_opens_when_the_slowest_collector_records():
    ctx = context(duration=4.0)
    proc, perf = Fake("proc", False, None), Fake("perf", True, 0.3)
    since = {"proc": ctx.t0, "perf": None}
    session._open_window(ctx, [proc, perf], since, None)
    assert proc.waits == []  # recording since start(): never waited for
    assert since["perf"] is not None and ctx.opened_at is not None
    assert ctx.opened_at >= since["perf"]
    assert ctx.deadline == pytest.approx(ctx.opened_at + 4.0)
    assert ctx.window_start_s() >= 0.3 and ctx.window() < 0.2


def test_a_collector_that_never_says_it_records_delays_the_window_at_most_the_timeout(
    monkeypatch,
):
    monkeypatch.setattr(session, "READY_TIMEOUT", 0.2)
    ctx = context()
    never = Fake("perf", True, None)
    since: dict[str, float | None] = {"perf": None}
    t = time.monotonic()
    session._open_window(ctx, [never], since, None)
    assert since["perf"] is None
    assert time.monotonic() - t < 1.0  # bounded by READY_TIMEOUT (0.2 s here), not forever
    assert ctx.deadline == pytest.approx(ctx.opened_at + ctx.options.duration)


def test_each_record_carries_its_real_window_and_a_late_start():
    ctx = context(duration=1.0)
    proc, perf = Fake("proc", False, None), Fake("perf", True, None)
    since = {"proc": ctx.t0 + 0.1, "perf": None}
    ctx.opened_at = ctx.t0 + 2.0
    ctx.ended_at = ctx.t0 + 3.0
    # perf said it recorded only after the window opened: asked again at the end
    perf.wait_recording = lambda until: ctx.t0 + 2.5  # type: ignore[method-assign]
    records = {"proc": proc.record(CollectorStatus.OK), "perf": perf.record(CollectorStatus.OK)}
    session._record_windows(ctx, [proc, perf], since, records)
    assert records["proc"].details["recording_s"] == [0.1, 3.0]
    assert records["perf"].details["recording_s"] == [2.5, 3.0]
    assert ctx.window() == pytest.approx(1.0) and ctx.end_s() == pytest.approx(3.0)
