"""One capture: resolve the target, run the collectors together, write the bundle.

Safety properties this module owns (tested in tests/e2e/test_safety_*.py):
- one capture per target at a time (an abstract socket the kernel releases if we die);
- helpers are stopped (SIGINT, grace, SIGKILL) on every path out, signals included;
- the target is never left stopped: its state is checked at the end and a SIGSTOP left
  behind by a killed tracer is undone;
- the bundle's manifest is written first with ``state: capturing`` and rewritten at the
  end, so even a capture that was killed leaves a readable, partial bundle;
- the bundle is bounded in bytes (``max_bundle_bytes``) and leaves ``min_free_bytes`` on
  the disk: over either, the capture ends early and keeps what it recorded; and
  ``RESERVE_BYTES`` set aside at the start are freed when recording ends, so that even a
  disk that filled up (another process wrote to it) leaves room to finish the manifest.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from diagnose import __version__
from diagnose.bundle.manifest import CSV_GUARDED, CollectorRecord, CollectorStatus, Manifest
from diagnose.bundle.sections import CaptureInfo, HostInfo, TargetInfo
from diagnose.bundle.writer import BundleWriter
from diagnose.collect.base import (
    READY_TIMEOUT,
    CaptureContext,
    CaptureOptions,
    Collector,
    CollectorFailed,
)
from diagnose.collect.budget import Plan, Rates, default_budget, plan_rates
from diagnose.collect.child import kill_all_children
from diagnose.collect.perf import pollfix
from diagnose.collect.procfs import parse_stat
from diagnose.collect.redact import redact_argv
from diagnose.collect.registry import build_collectors
from diagnose.collect.system import cpu_capacity
from diagnose.collect.target import Target, check_trace_access, resolve_target
from diagnose.collect.tasks import read_task, task_ids
from diagnose.collect.workers import FINISH_GRACE, WorkerCaptures, share
from diagnose.errors import Busy, OutputError, UsageError
from diagnose.words import count

ProgressFn = Callable[[str], None]
RESERVE_BYTES = 1024 * 1024


@dataclass
class CaptureResult:
    bundle: Path  # where the bundle is, for people
    manifest: Manifest
    target: Target
    writer: BundleWriter | None = None  # holds the bundle directory open (write reports there)

    @property
    def partial(self) -> bool:
        return self.manifest.capture.ended_by == "target_exited" or any(
            rec.status in (CollectorStatus.PARTIAL, CollectorStatus.FAILED)
            for rec in self.manifest.collectors.values()
        )


def validate_options(options: CaptureOptions) -> None:
    if not (options.duration > 0) or options.duration > 24 * 3600:
        raise UsageError(
            "--duration must be more than 0 and at most 86400 seconds (24 hours), "
            f"not {options.duration:g}"
        )
    if not (1 <= options.rate <= 1000):
        raise UsageError(f"--rate must be 1 to 1000 samples per second, not {options.rate}")
    if not (1 <= options.proc_rate <= 200):
        raise UsageError(f"--proc-rate must be 1 to 200 ticks per second, not {options.proc_rate}")


def default_out_dir(pid: int) -> Path:
    """``./diagnose-PID-TIMESTAMP``. Predictable, so it is created with ``mkdir`` (never an
    existing directory or link) and a random suffix is added if the name is taken
    (:meth:`BundleWriter.create` with ``default_name``)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(f"diagnose-{pid}-{stamp}")


def _start_time(pid: int) -> int:
    """When ``pid`` started, in clock ticks since boot (0 if /proc cannot say)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return parse_stat(fh.read()).starttime
    except (OSError, ValueError):
        return 0


def lock_address(pid: int) -> str:
    """The abstract socket name of the capture lock on ``pid`` (see :class:`_TargetLock`)."""
    return f"\0diagnose-capture-{pid}-{_start_time(pid)}"


class _TargetLock:
    """One capture per target PID at a time: a second one fails at once, never waits.

    The lock is an abstract Unix socket named after the PID (Linux): there is no file, so
    nothing for another user to plant a symlink at in a shared /tmp; every user's diagnose
    sees it; the kernel releases it when its holder exits, however it exits; and the
    holder's PID in the message comes from the kernel (SO_PEERCRED), not from a file.
    Where such sockets cannot be made (a sandbox), the capture goes on unlocked.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        # and its start time: a diagnose left behind on an exited process must not lock
        # out the next process given its PID (pid_max is 32768 on many hosts)
        self.address = lock_address(pid)
        self.sock: socket.socket | None = None

    def acquire(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self.address)
            sock.listen(1)
        except OSError as exc:
            sock.close()
            if exc.errno != errno.EADDRINUSE:
                return  # no abstract sockets here: nothing to lock with
            holder = self._holder()
            raise Busy(
                f"another diagnose capture of PID {self.pid} is running"
                + (f" (diagnose PID {holder})" if holder else "")
                + "; wait for it to finish",
                holder=holder,
            ) from None
        self.sock = sock

    def _holder(self) -> int | None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.5)
            try:
                probe.connect(self.address)
                cred = probe.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            except OSError:
                return None
        pid = struct.unpack("3i", cred)[0]
        return pid or None

    def release(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _thread_states(pid: int) -> dict[int, str]:
    out: dict[int, str] = {}
    for tid in task_ids(pid):
        with contextlib.suppress(ValueError, IndexError):
            text = read_task(pid, tid, "stat")
            out[tid] = text[text.rindex(")") + 2]
    return out


def ensure_not_stopped(pid: int, stopped_before: bool) -> str:
    """If the target is stopped now but was not before we attached, continue it."""
    states = _thread_states(pid)
    if not states or stopped_before:
        return ""
    if any(s in ("T", "t") for s in states.values()):
        time.sleep(0.2)  # a tracer may be detaching right now
        states = _thread_states(pid)
        if any(s == "T" for s in states.values()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGCONT)
            return "the target was left stopped by a tracer; diagnose sent it SIGCONT"
    return ""


class _Signals:
    """SIGINT/SIGTERM/SIGHUP end the capture early (it still writes a valid bundle)."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.received: str = ""
        self.saved: dict[int, object] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                self.saved[sig] = signal.signal(sig, self._handler)
        return self

    def _handler(self, signum: int, _frame: object) -> None:
        if self.received:
            # A second signal while we are writing: do not abandon the bundle half-made,
            # but make sure helpers are going down.
            return
        self.received = signal.Signals(signum).name
        self.stop.set()

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def capture(
    pid: int,
    out: Path | None,
    options: CaptureOptions,
    follow_children: bool = True,
    progress: ProgressFn | None = None,
    command: list[str] | None = None,
    on_started: Callable[[], None] | None = None,
    writer: BundleWriter | None = None,
    siblings: tuple[int, ...] = (),
    analysed: bool = True,
) -> CaptureResult:
    """Capture ``pid`` into a new bundle at ``out`` (or into ``writer``, a bundle directory
    created already). Raises DiagnoseError on bad input.

    ``siblings``: the service's other processes, where the caller knows them (one worker's
    capture, started by the diagnose that captures its service: collect/workers.py).

    ``on_started`` is called once, when every collector has been started (or has failed
    to), just before the capture waits out its window: ``diagnose sweep`` starts a load
    window there, so the collectors' start-up does not fall into it. It must not raise.

    ``analysed``: whether the bundle is judged in this process straight after; if so, the
    analysis's imports are made while the collectors convert (``attach --no-report`` and a
    worker's capture, whose finish shares the cores with its service's, skip them).
    """
    validate_options(options)
    if options.collectors is None or {"perf", "perf_sched"} & set(options.collectors):
        pollfix.prepare()  # built while the target is resolved and the collectors probe
    target = resolve_target(pid, follow_children, options.workers)
    if siblings:
        target = replace(
            target,
            siblings=siblings,
            note=f"PID {target.pid}: one of a service's {count(1 + len(siblings), 'worker')}, "
            "each captured on its own (--workers)",
        )
    check_trace_access(target.pid)
    lock = _TargetLock(target.pid)
    lock.acquire()
    try:
        return _capture_locked(
            target, out, options, progress, command, on_started, writer, analysed
        )
    finally:
        lock.release()


def target_record(target: Target) -> TargetInfo:
    """The manifest's ``target``: the process captured, and when it was chosen among
    several (a wrapper's child, a master's worker, a service with helper children), how
    (``selection``) and which processes were left out and why (``left_out``)."""
    chosen = bool(target.left_out or target.followed_from is not None)
    return TargetInfo(
        pid=target.pid,
        comm=target.comm,
        exe=target.exe,
        cmdline=tuple(redact_argv(target.cmdline)),
        is_python=target.is_python,
        python_version=target.python_version,
        followed_from=target.followed_from,
        siblings=tuple(target.siblings),
        note=target.note,
        selection=target.selection if chosen else "",
        left_out=tuple(target.left_out),
    )


def _capture_locked(
    target: Target,
    out: Path | None,
    options: CaptureOptions,
    progress: ProgressFn | None,
    command: list[str] | None,
    on_started: Callable[[], None] | None = None,
    writer: BundleWriter | None = None,
    analysed: bool = True,
) -> CaptureResult:
    if writer is None:
        writer = BundleWriter.create(out or default_out_dir(target.pid), default_name=out is None)
    out = writer.location
    options = share(options, target.pid, 1 + len(target.also))
    _check_free_space(writer, options)
    ctx, manifest = _begin(target, writer, options, command)
    collectors = build_collectors(options.collectors)
    stopped_before = any(s == "T" for s in _thread_states(target.pid).values())
    records: dict[str, CollectorRecord] = {}
    running: list[Collector] = []
    since: dict[str, float | None] = {}  # collector -> monotonic time it began recording
    ended_by = "duration"
    workers = WorkerCaptures(writer, [])
    try:
        with _Signals(ctx.stop_event) as sig:
            # the other workers' captures first: their windows open with this one's
            workers = WorkerCaptures.start(target, writer, options)
            _start_collectors(ctx, collectors, records, running, since)
            manifest.collectors = {**records}
            manifest.capture = replace(manifest.capture, running=tuple(c.name for c in running))
            writer.write_manifest(manifest)
            _open_window(ctx, running, since, progress)
            manifest.capture = replace(
                manifest.capture, window_start_s=round(ctx.window_start_s(), 3)
            )
            writer.write_manifest(manifest)
            if on_started is not None:
                on_started()
            ended_by = _wait(ctx, running, writer, progress)
            ctx.ended_at = time.monotonic()
            if sig.received:
                ended_by = f"interrupted ({sig.received})"
            _stop_all(running)
            if ended_by != "duration":
                workers.stop()
            writer.release_reserve()  # room to finish the bundle, should the disk be full
            if analysed:
                _import_aside("diagnose.bundle.columnar")
            if not _finish_collectors(ctx, running, records):
                ended_by = "disk_full"
            else:
                _compact(ctx, manifest, records, progress)
            workers.finish(time.monotonic() + FINISH_GRACE)
    finally:
        workers.kill()
        kill_all_children()
        writer.release_reserve()
        note = ensure_not_stopped(target.pid, stopped_before)
        manifest.collectors = {c.name: records[c.name] for c in collectors if c.name in records}
        _record_windows(ctx, running, since, records)
        _close_manifest(manifest, ctx, ended_by, note)
        with contextlib.suppress(OutputError):
            writer.write_manifest(manifest)
    return CaptureResult(out, manifest, target, writer)


def _begin(
    target: Target, writer: BundleWriter, options: CaptureOptions, command: list[str] | None
) -> tuple[CaptureContext, Manifest]:
    """The capture's context and first manifest (written), from now on; its rates planned."""
    t0 = time.monotonic()
    ctx = CaptureContext(
        target=target,
        writer=writer,
        options=options,
        t0=t0,
        deadline=t0 + READY_TIMEOUT + options.duration,  # until the window opens
    )
    ctx.plan = plan_for(target.pid, options)
    manifest = _first_manifest(target, options, command, t0)
    manifest.capture = replace(
        manifest.capture, proc_rate_hz=ctx.plan.rates.proc, cpu_budget=ctx.plan.to_dict()
    )
    writer.write_manifest(manifest)
    writer.reserve(RESERVE_BYTES)
    return ctx, manifest


def plan_for(pid: int, options: CaptureOptions) -> Plan:
    """The samplers' rates for this target within diagnose's CPU budget (collect/budget.py):
    its thread count and the cores it may use, read now."""
    threads = len(task_ids(pid))
    budget = options.cpu_budget
    if budget is None:
        budget = default_budget(cpu_capacity(pid).get("cores_available"))
    asked = Rates(options.rate, options.rate, options.proc_rate)
    return plan_rates(
        asked, threads, budget, keep_pyspy=options.rate_chosen, keep_proc=options.proc_rate_chosen
    )


def _check_free_space(writer: BundleWriter, options: CaptureOptions) -> None:
    free = writer.free_bytes()
    if free < options.min_free_bytes:
        writer.discard()
        raise OutputError(
            f"only {free // (1024 * 1024)} MiB free on the disk of {writer.location}; diagnose "
            f"keeps at least {options.min_free_bytes // (1024 * 1024)} MiB free (choose "
            "another --out)"
        )


def _first_manifest(
    target: Target, options: CaptureOptions, command: list[str] | None, t0: float
) -> Manifest:
    """The manifest as the capture starts (state ``capturing``)."""
    started_wall = datetime.now(timezone.utc)
    return Manifest(
        tool_version=__version__,
        target=target_record(target),
        host=HostInfo(
            hostname=socket.gethostname(),
            logical_cpus=os.cpu_count(),
            machine=os.uname().machine,  # the analysis reads system call numbers by it
        ),
        capture=CaptureInfo(
            started=started_wall.isoformat(timespec="milliseconds"),
            monotonic_start=t0,
            duration_requested=options.duration,
            rate_hz=options.rate,
            proc_rate_hz=options.proc_rate,
            py_spy_mode="native"
            if options.native
            else ("nonblocking" if options.nonblocking else "blocking"),
            command=tuple(redact_argv(command or sys.argv)),
            collectors_requested=tuple(options.collectors) if options.collectors else None,
        ),
        csv_text=CSV_GUARDED,
    )


def _start_collectors(
    ctx: CaptureContext,
    collectors: list[Collector],
    records: dict[str, CollectorRecord],
    running: list[Collector],
    since: dict[str, float | None],
) -> None:
    """Probe and start each collector: started ones go to ``running``, the others to
    ``records`` with why (unavailable, or failed)."""
    for c in collectors:
        try:
            reason = c.probe(ctx)
        except CollectorFailed as exc:
            records[c.name] = CollectorRecord(c.name, CollectorStatus.FAILED, str(exc))
            continue
        if reason:
            records[c.name] = CollectorRecord(c.name, CollectorStatus.UNAVAILABLE, reason)
            continue
        try:
            c.start(ctx)
            running.append(c)
            since[c.name] = None if c.slow_start else time.monotonic()
        except Exception as exc:  # a collector must never take the capture down
            records[c.name] = CollectorRecord(
                c.name, CollectorStatus.FAILED, f"could not start: {exc}"
            )


def _stop_all(running: list[Collector]) -> None:
    """Tell every running collector to stop (each stops its helpers), whatever one raises."""
    for c in running:
        with contextlib.suppress(Exception):
            c.stop()


#: How long the collectors' conversions may take in all: each gets ``timeout=30`` for its
#: helpers; one still going past this is abandoned and marked failed, so a capture always ends.
FINISH_DEADLINE_S = 90.0


def _finish_collectors(
    ctx: CaptureContext,
    running: list[Collector],
    records: dict[str, CollectorRecord],
    deadline_s: float = FINISH_DEADLINE_S,
) -> bool:
    """Let the stopped collectors convert their outputs into the bundle, side by side (perf
    script loads a large library's symbols in a process of its own while the scheduler trace
    is converted), each on a daemon thread joined until the deadline. False when the disk
    filled up meanwhile."""
    results: dict[str, tuple[CollectorRecord, bool]] = {}

    def run(c: Collector) -> None:
        results[c.name] = _finish_one(ctx, c)

    threads = [
        threading.Thread(target=run, args=(c,), name=f"diagnose-finish {c.name}", daemon=True)
        for c in running
    ]
    for t in threads:
        t.start()
    end = time.monotonic() + deadline_s
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    room = True
    for c in running:
        got = results.get(c.name)
        if got is None:
            reason = (
                f"did not finish converting its output within {deadline_s:g} s and was "
                "abandoned; what it wrote may be incomplete"
            )
            records[c.name] = CollectorRecord(c.name, CollectorStatus.FAILED, reason)
            continue
        records[c.name] = got[0]
        room = room and not got[1]
    return room


def _finish_one(ctx: CaptureContext, c: Collector) -> tuple[CollectorRecord, bool]:
    """One collector's record once it has converted its output, and whether the disk was
    full."""
    finish_t = time.monotonic()
    cpu_t = time.thread_time()
    try:
        record = c.finish(ctx, timeout=30)
    except OutputError as exc:
        return CollectorRecord(c.name, CollectorStatus.FAILED, str(exc)), True
    except Exception as exc:
        reason = f"internal error while finishing: {type(exc).__name__}: {exc}"
        return CollectorRecord(c.name, CollectorStatus.FAILED, reason), False
    # what converting its output cost: time to verdict, per collector
    record.details["finish_s"] = round(time.monotonic() - finish_t, 3)
    # and the CPU its thread used (its helpers, perf script, not counted): the finishes
    # share one interpreter, so where these add up to more than the longest finish_s, the
    # conversions queued for the GIL rather than ran side by side
    record.details["finish_cpu_s"] = round(time.thread_time() - cpu_t, 3)
    return record, False


def _import_aside(module: str) -> None:
    """Import ``module`` on a thread of its own, now, while the collectors convert what they
    recorded: the tables' conversion (and the analysis after it) need pandas and pyarrow,
    whose import (0.5-1 s) then overlaps a conversion that waits on ``perf script`` (a torch
    service's). Not earlier: imported while the collectors start, it ran into the window and
    diagnose's CPU there went from 0.10 to 0.15 cores (docs/performance.md); imported while
    the collectors start with the window waiting for it, it moved as much time into the
    start-up as it took out of the finish. A failed import here is raised again
    where the module is used."""

    def run() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module(module)

    threading.Thread(target=run, name=f"import {module}", daemon=True).start()


def _compact(
    ctx: CaptureContext,
    manifest: Manifest,
    records: dict[str, CollectorRecord],
    progress: ProgressFn | None,
) -> None:
    """The large tables as Parquet (bundle/columnar.py), now that nothing writes them; the
    collectors' lists of files name what is there."""
    if ctx.options.tables == "csv":
        return
    if progress is not None:
        progress("compacting the large tables")
    from diagnose.bundle.compaction import compact_tables, parquet_name

    tables = compact_tables(ctx.writer, ctx.options.tables)
    manifest.capture = replace(manifest.capture, tables=tables)
    for rec in records.values():
        rec.files = [parquet_name(f) if f in tables["parquet"] else f for f in rec.files]


def _close_manifest(manifest: Manifest, ctx: CaptureContext, ended_by: str, note: str) -> None:
    """The manifest's last state: when and why the capture ended, and ``complete``."""
    ended_wall = datetime.now(timezone.utc)
    now = time.monotonic()
    sampled_until = ctx.ended_at if ctx.ended_at is not None else now
    manifest.capture = replace(
        manifest.capture,
        ended=ended_wall.isoformat(timespec="milliseconds"),
        # the measured window (from window_start_s, when every collector recorded);
        # converting the helpers' outputs afterwards is finish_s
        duration_actual=round(sampled_until - ctx.t0 - ctx.window_start_s(), 3),
        finish_s=round(now - sampled_until, 3),
        # the plan as it ended: py-spy's rate may have been lowered from its measured cost
        cpu_budget=ctx.plan.to_dict() if ctx.plan is not None else manifest.capture.cpu_budget,
        ended_by=ended_by,
        running=(),
        safety_note=note,
    )
    manifest.state = "complete"


def _open_window(
    ctx: CaptureContext,
    running: list[Collector],
    since: dict[str, float | None],
    progress: ProgressFn | None,
) -> None:
    """Wait until every collector records (READY_TIMEOUT at most), then open the measured
    window: ``duration`` seconds from now. perf took 1.6-3 s to start recording on a busy
    2-core host: a window counted from the command's start lost that much of every capture
    (a 4 s capture recorded no perf sample at all)."""
    until = time.monotonic() + READY_TIMEOUT
    for c in running:
        if since.get(c.name) is None and not ctx.stop_event.is_set():
            if progress is not None:
                progress(f"waiting for {c.name} to start recording")
            since[c.name] = c.wait_recording(until)
    ctx.opened_at = time.monotonic()
    ctx.deadline = ctx.opened_at + ctx.options.duration


def _record_windows(
    ctx: CaptureContext,
    running: list[Collector],
    since: dict[str, float | None],
    records: dict[str, CollectorRecord],
) -> None:
    """Each collector's real recording window in its record: ``recording_s`` [from, to]
    in seconds since the capture's start (from: null if it never said it recorded)."""
    end = ctx.end_s()
    for c in running:
        rec = records.get(c.name)
        if rec is None:
            continue
        began = since.get(c.name)
        if began is None and c.slow_start:
            with contextlib.suppress(Exception):
                began = c.wait_recording(0.0)  # a late start, after the window opened
        frm = None if began is None else round(min(began - ctx.t0, end), 3)
        rec.details.setdefault("recording_s", [frm, round(end, 3)])


def _wait(
    ctx: CaptureContext,
    running: list[Collector],
    writer: BundleWriter,
    progress: ProgressFn | None,
) -> str:
    """Sleep until the deadline, a stop, the target's exit or the disk budget."""
    opts = ctx.options
    last_budget_check = 0.0
    while True:
        now = time.monotonic()
        if ctx.stop_event.is_set():
            return ctx.stop_reason or "interrupted"
        if now >= ctx.deadline:
            return "duration"
        if ctx.target_exited.is_set() or not ctx.target.alive():
            ctx.target_exited.set()
            return "target_exited"
        if now - last_budget_check >= 0.25:  # a few file sizes: cheap
            last_budget_check = now
            try:
                size = writer.size_bytes()
                free = writer.free_bytes()
            except OSError:
                size, free = 0, opts.min_free_bytes
            if size > opts.max_bundle_bytes:
                ctx.request_stop("disk_budget")
                return "disk_budget"
            if free < opts.min_free_bytes // 2:
                ctx.request_stop("disk_full")
                return "disk_full"
        if progress is not None:
            left = ctx.deadline - now
            parts = [p for p in (c.progress() for c in running) if p]
            progress(f"{left:5.1f} s left | " + " | ".join(parts))
        ctx.stop_event.wait(0.25)
