"""The collector interface and the context every collector gets.

Lifecycle, driven by :mod:`diagnose.collect.session`:

``probe`` (may it run here? the reason if not) -> ``start`` (spawn and return at once) ->
``wait_recording`` (block until the collector really records: helpers such as perf and
py-spy take seconds to start on a busy host, so the measured window opens only once every
collector records, see :mod:`diagnose.collect.session`) -> ``progress`` (a short string
for the progress line, polled) -> ``stop`` (end early; may be
called more than once, from a signal handler's aftermath) -> ``finish`` (wait, convert what
was recorded into bundle files, return a :class:`CollectorRecord`). ``finish`` must never
raise for a problem of the host or target: it reports ``failed`` or ``partial`` instead.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.bundle.writer import BundleWriter
from diagnose.collect.budget import Plan, Rates
from diagnose.collect.target import Target

#: how long the session waits for every collector to record before it opens the window
#: anyway (perf took 1.6-3 s to start recording on a busy 2-core host)
READY_TIMEOUT = 10.0


#: --perf-scope's values (CaptureOptions.perf_scope)
PERF_SCOPES = ("auto", "threads")


@dataclass
class CaptureOptions:
    duration: float = 10.0  # seconds
    rate: int = 100  # stack samples per second (py-spy, the GIL sampler, perf)
    proc_rate: int = 20  # /proc thread-state ticks per second
    # diagnose's CPU budget in cores (collect/budget.py): the samplers' rates are lowered to
    # fit it; None: the default (2.5% of the cores available, at least 0.05); 0: no budget
    cpu_budget: float | None = None
    rate_chosen: bool = False  # the user chose --rate: py-spy keeps it whatever the budget
    proc_rate_chosen: bool = False  # the user chose --proc-rate
    native: bool = False  # py-spy --native (blocking; perf provides native stacks cheaply)
    nonblocking: bool = True  # py-spy --nonblocking
    collectors: tuple[str, ...] | None = None  # None: all that this host supports
    max_bundle_bytes: int = 1024 * 1024 * 1024  # the disk budget of one bundle
    min_free_bytes: int = 256 * 1024 * 1024  # stop before the disk holds less than this
    tables: str = "auto"  # large tables as Parquet once captured (bundle/columnar.py)
    # which workers of a pre-fork service to capture (collect/selection.py choose_workers):
    # "all" (the busiest few, one capture each), "busiest", or PIDs
    workers: str | tuple[int, ...] = "all"
    # perf's on-CPU sampler: "auto" records the CPUs the target may run on where diagnose
    # may (collect/perf/oncpu.py), "threads" the target's threads alone
    perf_scope: str = "auto"
    # scheduler events the perf_sched collector converts (collect/perf/sched.py
    # event_budget); None: its default for the duration. The workers' captures share it.
    sched_events: int | None = None


@dataclass
class CaptureContext:
    """What collectors share during one capture. Times are ``time.monotonic()`` seconds."""

    target: Target
    writer: BundleWriter
    options: CaptureOptions
    t0: float  # monotonic time of the capture's start: bundle times are relative to it
    # monotonic time at which the capture ends unless stopped earlier; until the window
    # opens, the latest it can be (t0 + READY_TIMEOUT + duration): helpers bound their own
    # life by it, and no sampler ends before the window opened
    deadline: float
    stop_event: threading.Event = field(default_factory=threading.Event)
    target_exited: threading.Event = field(default_factory=threading.Event)
    stop_reason: str = ""  # why the capture was stopped early, when a collector stopped it
    ended_at: float | None = None  # monotonic time the capture window closed (set by the session)
    # monotonic time the measured window opened: every collector recording (or
    # READY_TIMEOUT passed); None while the collectors start. ``deadline`` is then moved to
    # ``opened_at + duration``: a helper's start-up never eats the window.
    opened_at: float | None = None
    #: the samplers' rates within diagnose's CPU budget (collect/budget.py), set before the
    #: collectors start; None: the rates asked for (a context built by hand)
    plan: Plan | None = None

    def rates(self) -> Rates:
        """The sampling rates this capture uses."""
        if self.plan is not None:
            return self.plan.rates
        return Rates(self.options.rate, self.options.rate, self.options.proc_rate)

    def window(self) -> float:
        """Length of the measured window in seconds (so far, while it is open)."""
        end = self.ended_at if self.ended_at is not None else time.monotonic()
        start = self.opened_at if self.opened_at is not None else self.t0
        return max(0.0, end - start)

    def window_start_s(self) -> float:
        """When the measured window opened, in seconds since ``t0`` (0 before it opened)."""
        return 0.0 if self.opened_at is None else self.opened_at - self.t0

    def end_s(self) -> float:
        """When the window closed (so far: now), in seconds since ``t0``."""
        end = self.ended_at if self.ended_at is not None else time.monotonic()
        return end - self.t0

    def request_stop(self, reason: str) -> None:
        """End the capture early for everyone (e.g. the disk filled up)."""
        if not self.stop_event.is_set():
            self.stop_reason = reason
        self.stop_event.set()

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def elapsed(self) -> float:
        return time.monotonic() - self.t0


def covered_most(covered: float, window: float) -> bool:
    """Whether a collector that ran ``covered`` seconds of a ``window``-second capture saw
    enough of it for what it did not record to count as absent (an idle target), rather
    than missed: three quarters of the window, or all of it but a second (a helper's start)."""
    return covered >= 0.75 * window or window - covered <= 1.0


class CollectorFailed(Exception):
    """Raised by ``probe`` when the collector should run here but cannot (a declared
    dependency is missing): recorded as ``failed``, not ``unavailable``."""


class Collector(ABC):
    name: str = "?"
    #: a short description for --collectors help and the report
    description: str = ""
    #: its helper takes a while to record after ``start`` (perf, py-spy): the session
    #: waits for :meth:`wait_recording` before it opens the window; others record at once
    slow_start: bool = False

    def probe(self, ctx: CaptureContext) -> str | None:
        """Return why this collector cannot run for this target/host, or None.

        Raise :class:`CollectorFailed` when it should run but cannot (a broken install)."""
        return None

    @abstractmethod
    def start(self, ctx: CaptureContext) -> None: ...

    def wait_recording(self, until: float) -> float | None:
        """For a collector with ``slow_start``: wait (until monotonic time ``until`` at
        most; a past ``until`` does not block) for its helper to record; return the
        monotonic time it began, None if it has not (yet)."""
        return None

    def progress(self) -> str:
        return ""

    def stop(self) -> None:  # noqa: B027 - optional hook
        """Ask the collector to end early. Idempotent."""

    @abstractmethod
    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord: ...

    # helpers for subclasses
    def record(
        self,
        status: CollectorStatus,
        reason: str = "",
        files: list[str] | None = None,
        **details: object,
    ) -> CollectorRecord:
        return CollectorRecord(self.name, status, reason, files or [], dict(details))
