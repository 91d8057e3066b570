"""``diagnose watch``: a short capture every ``every_s`` seconds, each judged as ``attach``
judges it, kept in a store (diagnose/watch/store.py) within its retention.

One capture at a time: the next starts ``every_s`` after the previous one started, or at
once when a capture (and its analysis) took longer; never two together. A capture is the
library's :func:`~diagnose.collect.session.capture` and its judgement
:func:`~diagnose.app.report.write_reports` (report.json only: the HTML page, the costliest
part, is drawn only for the bundles kept whole). SIGINT, SIGTERM and SIGHUP end the watch:
a capture in progress ends early as attach's does and is still judged and stored.

With a latency query (``--prometheus``), the service's P99 is read from Prometheus as each
capture ends; a P99 more than ``--drift`` above the baseline (diagnose/watch/drift.py) keeps
the capture whole, with a comparison against the last capture before the drift began
(compare.json and compare.html in its directory, :mod:`diagnose.app.compare`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psutil

from diagnose.app.output import open_output
from diagnose.app.report import Diagnosis, render_reports, write_reports
from diagnose.app.reporters import file_names
from diagnose.bundle.safedir import SafeDir
from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import capture, lock_address
from diagnose.errors import BadBundle, Busy, DiagnoseError, TargetError, one_line
from diagnose.run import LaunchedCommand, terminate_is_interrupt
from diagnose.watch.drift import BASELINE_WINDOW_S, DEFAULT_DRIFT, Drift, judge
from diagnose.watch.exporter import WatchCollector, serve
from diagnose.watch.latency import LatencyQuery, Reading
from diagnose.watch.store import CAPTURES, CaptureRow, Store, row_values

#: how often the wait between captures looks at the target (a --run command that exited
#: ends the watch within this, not at the next capture minutes later)
POLL_S = 0.5
#: what a drifted capture's comparison is written as (compare.json, and a page to open)
COMPARE_FORMATS = ["json", "html"]


@dataclass(frozen=True)
class WatchPlan:
    every_s: float
    options: CaptureOptions  # the capture's; ``duration`` is --capture
    keep_s: float
    max_store_bytes: int
    follow: bool = True
    rules_dirs: tuple[Path, ...] = ()
    command: tuple[str, ...] = ()
    count: int | None = None  # stop after this many captures (None: until stopped)
    latency: LatencyQuery | None = None  # the service's P99 from Prometheus (--prometheus)
    drift: float = DEFAULT_DRIFT  # a P99 this much above the baseline is a drift (0.2: 20%)


@dataclass(frozen=True)
class Stored:
    """What one cycle did: the row added (None if the cycle was skipped), the captures
    retention removed, a note (why it was skipped), and a warning (why the service's P99
    was not read, or its drift not compared)."""

    row: CaptureRow | None
    changed: bool = False
    removed: tuple[CaptureRow, ...] = ()
    note: str = ""
    warning: str = ""


@dataclass
class WatchEnd:
    reason: str  # interrupted | target_exited | count
    captures: int
    detail: str = ""


@dataclass
class Watcher:
    plan: WatchPlan
    store: Store
    collector: WatchCollector | None = None
    on_stored: Callable[[Stored], None] = lambda _s: None
    progress: Callable[[str], None] | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    stopped_by: str = ""
    captures: int = 0

    def run(self, pid: int, alive: Callable[[], bool]) -> WatchEnd:
        """Watch ``pid`` until a signal, the target's exit (``alive``), or ``count``."""
        with self._signals():
            while not self.stop.is_set():
                started = time.monotonic()
                end = self._cycle(pid)
                if end is not None:
                    return end
                if self.plan.count is not None and self.captures >= self.plan.count:
                    return WatchEnd("count", self.captures)
                if not self._wait(started + self.plan.every_s, alive):
                    return WatchEnd("target_exited", self.captures, "between captures")
        return WatchEnd("interrupted", self.captures, self.stopped_by)

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        """Between captures a stop signal only sets ``stop`` (the capture installs its own
        handlers while it runs, and restores these after)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, _frame: object) -> None:
            self.stopped_by = self.stopped_by or signal.Signals(signum).name
            self.stop.set()

        sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        saved = {s: signal.signal(s, handler) for s in sigs}
        try:
            yield
        finally:
            for s, h in saved.items():
                signal.signal(s, h)

    def _wait(self, until: float, alive: Callable[[], bool]) -> bool:
        """Sleep until ``until`` or a stop; False as soon as the target is gone."""
        while not self.stop.is_set():
            if not alive():
                return False
            left = until - time.monotonic()
            if left <= 0:
                break
            self.stop.wait(min(POLL_S, left))
        return True

    def _cycle(self, pid: int) -> WatchEnd | None:
        """One capture, judged and stored; a WatchEnd when the watch must end now."""
        rel = self._new_member(pid)
        try:
            result = capture(
                pid,
                self.store.path / rel,
                self.plan.options,
                self.plan.follow,
                progress=self.progress,
                command=list(self.plan.command),
            )
        except TargetError as exc:
            return WatchEnd("target_exited", self.captures, one_line(exc, 300))
        except Busy as exc:  # another diagnose captures it now: this turn is skipped
            self.on_stored(Stored(None, note=f"skipped: {_busy_note(exc, pid)}"))
            return None
        cap = result.manifest.capture
        assert result.writer is not None
        reading = self.plan.latency.read() if self.plan.latency is not None else None
        try:
            stored = self._judge_and_store(result.writer.dir.dup(), rel, reading)
        finally:
            result.writer.close()
        self.captures += stored.row is not None
        self.on_stored(stored)
        if cap.interrupted:
            self.stopped_by = self.stopped_by or cap.ended_by or "interrupted"
            self.stop.set()
        elif cap.ended_by == "target_exited":
            return WatchEnd("target_exited", self.captures, "during a capture")
        return None

    def _new_member(self, pid: int) -> str:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        rel = f"{CAPTURES}/{pid}-{stamp}"
        n = 1
        while self.store.dir.lstat(rel) is not None:  # two captures within a second
            n += 1
            rel = f"{CAPTURES}/{pid}-{stamp}-{n}"
        return rel

    def _judge_and_store(self, bundle_dir: SafeDir, rel: str, reading: Reading | None) -> Stored:
        try:
            d, _ = write_reports(bundle_dir, ["json"], None, self.plan.rules_dirs)
        except BadBundle as exc:  # nothing usable was recorded: nothing is kept
            with contextlib.suppress(OSError):
                self.store.dir.remove_tree(rel)
            return Stored(None, note=f"not judged: {one_line(exc, 200)}")
        try:
            return self._store(d, rel, reading)
        finally:
            _close(d)

    def _store(self, d: Diagnosis, rel: str, reading: Reading | None) -> Stored:
        service = self.collector.service if self.collector else str(d.report["target"]["comm"])
        values = row_values(d.report, service)
        prev = self.store.latest()
        changed = prev is None or prev.verdict != (values["category"], values["kind"])
        drift = self._drift(reading, values["started_unix"])
        drifted = drift is not None and drift.drifted
        if changed or drifted:  # kept whole: with its page, for people to open
            render_reports(
                d.report, open_output(d.bundle, ["html"], None, file_names("report")), ["html"]
            )
        else:
            self.store.keep_report_only(rel)
        warning = f"P99 not read: {reading.note}" if reading and reading.p99_ms is None else ""
        if drift is not None:  # a reading: no warning so far
            before = self.store.last_steady() if drifted else None
            compared, warning = self._compare(d, rel, drift, before) if drifted else (None, "")
            values.update(p99_ms=drift.p99_ms, p99_baseline_ms=drift.baseline_ms,
                          drift=int(drifted), comparison=compared,
                          drift_from=before.id if before and compared else None)  # fmt: skip
        row = self.store.add(values, rel, kept_whole=changed or drifted)
        removed = self.store.prune(time.time(), self.plan.keep_s, self.plan.max_store_bytes)
        if self.collector is not None:
            self.collector.update(d.report, row.started_unix, (row.p99_ms, row.p99_baseline_ms))
        return Stored(row, changed, tuple(removed), warning=warning)

    def _drift(self, reading: Reading | None, started_unix: float) -> Drift | None:
        """This capture's P99 against the last day's readings (None: no reading)."""
        if reading is None or reading.p99_ms is None:
            return None
        readings = self.store.readings(started_unix - BASELINE_WINDOW_S)
        return judge(reading.p99_ms, readings, self.plan.drift)

    def _compare(
        self, d: Diagnosis, rel: str, drift: Drift, before: CaptureRow | None
    ) -> tuple[str | None, str]:
        """Compare the drifted capture with ``before``, the last one before the drift
        began, each side with its P99; the comparison goes into the drifted capture's
        directory. Returns its compare.json relative to the store, or None and why not."""
        # compare reads the flame graphs with pandas: imported once a drift needs it
        from diagnose.app.compare import compare, write_comparison
        from diagnose.verdict.outcome import figures

        if before is None or before.p99_ms is None:
            return None, "P99 drifted, but no capture before the drift to compare with"
        assert self.plan.latency is not None
        source = self.plan.latency.source
        try:
            c = compare(
                self.store.report(before),
                d.report,
                service=(figures(source=source, p99_ms=before.p99_ms),
                         figures(source=source, p99_ms=drift.p99_ms)),
            )  # fmt: skip
            target = open_output(d.bundle, COMPARE_FORMATS, None, file_names("compare"))
            write_comparison(c, target, COMPARE_FORMATS)
        except (DiagnoseError, OSError, ValueError, KeyError, TypeError) as exc:
            # an earlier report this diagnose cannot compare: the capture is still stored
            return None, f"P99 drifted, but the comparison failed: {one_line(exc, 200)}"
        return f"{rel}/{file_names('compare')['json']}", ""


def _close(d: Diagnosis) -> None:
    d.bundle.close()
    for _entry, wd, _why in d.workers:
        if wd is not None:
            _close(wd)


@dataclass(frozen=True)
class Target:
    """What to watch: a running PID, or a command to start (``--run``)."""

    pid: int | None = None
    argv: tuple[str, ...] = ()
    warmup: float = 1.0
    grace: float = 5.0


def _busy_note(exc: Busy, pid: int) -> str:
    """Why a turn was skipped. A capture lock this very process made is its own earlier
    capture's, kept open by a process it left behind (a child that inherited the lock's
    socket): those processes end here, so that the next turn can capture."""
    if exc.holder != os.getpid():
        return one_line(exc, 200)
    left = _lock_holders(pid)
    for c in left:
        with contextlib.suppress(psutil.Error):
            c.kill()
    psutil.wait_procs(left, timeout=5)
    pids = ", ".join(str(c.pid) for c in left) or "none found"
    return (
        f"this watch's own earlier capture of PID {pid} still held its lock; "
        f"processes it left behind holding it ended: {pids}"
    )


def _lock_holders(pid: int) -> list[psutil.Process]:
    """This process's descendants with a descriptor on the capture lock of ``pid`` (its
    abstract socket, found by name in /proc/net/unix)."""
    name = "@" + lock_address(pid).lstrip("\0")
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as fh:
            inodes = {f"socket:[{p[6]}]" for p in (ln.split() for ln in fh) if p[7:8] == [name]}
    except OSError:
        return []
    held = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error, OSError):
            fds = os.listdir(f"/proc/{child.pid}/fd")
            if any(_readlink(f"/proc/{child.pid}/fd/{fd}") in inodes for fd in fds):
                held.append(child)
    return held


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def watch(
    plan: WatchPlan,
    store_path: Path,
    target: Target,
    service: str | None = None,
    metrics: tuple[str, int] | None = None,
    on_stored: Callable[[Stored], None] = lambda _s: None,
    on_start: Callable[[int, str], None] = lambda _p, _s: None,
    progress: Callable[[str], None] | None = None,
) -> WatchEnd:
    """Open the store, start the command (``--run``) and the metrics server, watch until
    the end; every one of them is closed or stopped on the way out. ``on_start(pid,
    service)`` is called once the target is known."""
    store = Store.create(store_path)
    child: LaunchedCommand | None = None
    server = None
    try:
        with terminate_is_interrupt():  # until the watch's own handlers are in place
            if target.argv:
                child = LaunchedCommand(target.argv)
                child.warm_up(target.warmup, progress)
        pid = child.pid if child is not None else int(target.pid or 0)
        name = service or _comm(pid)
        collector = WatchCollector(name, pid)
        if metrics is not None:
            server = serve(collector, *metrics)
        on_start(pid, name)
        watcher = Watcher(plan, store, collector, on_stored, progress)
        alive = (lambda: child.status() is None) if child is not None else (lambda: _alive(pid))
        end = watcher.run(pid, alive)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        if child is not None:
            exit_ = child.stop(target.grace, capture_ended=False)
        store.close()
    if child is not None and end.reason == "target_exited":
        end.detail = f"the command {exit_.describe()}"
    return end


def _comm(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        raise TargetError(f"no process with PID {pid}") from None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
