"""The ``perf_sched`` collector: context switches, run-queue delay, off-CPU and futex stacks.

One ``perf record -p PID`` of:

- ``--switch-events``: the exact moment each thread of the target leaves and gets back a
  CPU (and which), with the kernel's own "preempted" flag;
- ``sched:sched_switch`` with frame-pointer call chains: the state a thread left in
  (R = preempted, S = sleeping, D = disk) and where it blocked;
- ``sched:sched_wakeup``: who woke whom. In a per-process recording a wakeup is seen only
  when the waker is a thread of the target (a timer interrupt or another process waking it
  is not recorded), so wakeup-to-run delay is known for those wakeups and for every
  preemption, and stays unknown (never estimated) for the rest;
- ``syscalls:sys_enter_futex`` / ``sys_exit_futex`` (where the kernel has them): every
  futex wait with its address, duration and releaser.

Frame-pointer call chains (see :mod:`diagnose.collect.perf`): DWARF on sched_switch wrote
ten times more and unwound no further than libc's futex wrapper; the Python frames come from
py-spy, joined at the same time in the analysis. The recording is bounded by a file cap
(``--max-size``): the size its event budget needs (below), so that a busy service is traced
only for as long as what is converted takes (a torch service under load: its first second),
or 256 MB or a quarter of the bundle budget where those are smaller (reported as missing
events when hit); by a 2 MiB ring buffer per CPU, 64 MiB for all CPUs at most (dropped
events are counted); and by :data:`MAX_SECONDS` of the capture window. perf checks the cap
when it writes, so the file can exceed it by up to its ring buffers. A recording that perf
stopped at the disk's cap ("perf size limit reached") misses events and is reported as cut;
one it stopped at its event budget's size holds more than the conversion reads, and says
when it stopped (``traced_until_s``) in a note.

Converting the recording (``perf script``, then pairing its events) is most of the time from
the end of a capture to its verdict, so it is bounded too: at most :func:`event_budget`
events (:data:`EVENTS_PER_S` per second of the window, :data:`MIN_EVENTS` at least) are
converted, the earliest ones. A recording with more is read up to that many events, its
tables end there (``converted_until_s``), and the record says so as a note: the rates come
from the tables' own time span, so a cut trace still gives them per second.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.bundle.writer import guarded_csv_writer
from diagnose.collect.base import CaptureContext, CaptureOptions
from diagnose.collect.perf.record import (
    PerfCollectorBase,
    PerfRecord,
    demangling,
    left_mangled,
    no_recording,
    ring_pages,
)
from diagnose.formats.perf_sched import FutexWait, OffCpu, SchedSummary, convert, futex_cmd
from diagnose.formats.perf_script import FrameNamer, PerfEvent, demangle_table, parse_script
from diagnose.formats.stacks import StackTable, ThreadFrame, format_folded

MAX_BYTES = 256 * 1024 * 1024
MAX_SECONDS = 60.0
RING_BYTES = (
    2 * 2**20
)  # per CPU (64 MiB in all at most): 1 MiB dropped events on a loaded 2-core host
SCRIPT_TIMEOUT = 180.0
#: events converted per second of the capture window, and at least: converting an event costs
#: ~14 us and a busy service records tens of thousands a second, so converting all of them
#: would make this trace the last part of every verdict; the first 30,000 events of a 10 s
#: window judge every sample as all of them do (docs/accuracy.md, "Per-threshold evidence").
#: Not bounded by it: perf script's start, which reads the symbols of every library the
#: stacks pass through (collect/perf/symfs.py names libtorch_cpu.so's itself)
EVENTS_PER_S = 3_000
MIN_EVENTS = 30_000
#: bytes of perf.data per scheduler event, at most, for the recording's own cap: perf stops
#: recording once it has written what the event budget converts (``event_budget *
#: BYTES_PER_EVENT``), so the service is not traced, and does not pay for tracing, in the
#: rest of the window. About 100 bytes an event were measured (docs/accuracy.md); 200
#: leaves room for deeper call chains, and a trace with fewer events is judged as well.
BYTES_PER_EVENT = 200


#: the least a capture converts when several (a service's workers, ``--workers``) share the
#: event budget: a two-worker service's captures convert 15,000 each
MIN_SHARED_EVENTS = 10_000


def event_budget(window_s: float, captures: int = 1) -> int:
    """How many scheduler events a capture window of ``window_s`` seconds converts: one of
    ``captures`` side by side (a service's workers) converts its share, 1/N of that."""
    whole = max(MIN_EVENTS, int(EVENTS_PER_S * window_s))
    return whole if captures <= 1 else max(MIN_SHARED_EVENTS, whole // captures)


def capture_budget(options: CaptureOptions) -> int:
    """A capture's event budget: ``--sched-events`` (a worker's share), or the default for
    the duration asked for (not for the window so far: the recording's cap is set before
    the window opens)."""
    given = options.sched_events
    return given if given is not None else event_budget(options.duration)


OFFCPU_COLUMNS = ["t", "tid", "cpu", "state", "dur", "cpu_in", "runq", "waker", "stack_id"]
FUTEX_COLUMNS = ["t", "tid", "uaddr", "op", "dur", "ret", "blocked", "waker", "wake_t", "stack_id"]


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"


def _r(x: float | None, nd: int = 6) -> Any:
    return "" if x is None else round(x, nd)


class PerfSchedCollector(PerfCollectorBase):
    name = "perf_sched"
    description = (
        "context switches, run-queue delay, off-CPU and futex-wait stacks (perf tracepoints)"
    )
    feature = "sched_tracepoints"
    futex = False
    by_budget = False  # the recording's cap is its event budget's size (not the disk's)

    def start(self, ctx: CaptureContext) -> None:
        caps = self.caps
        assert caps is not None
        events = [
            "--switch-events",
            "-e", "sched:sched_switch/call-graph=fp/",
            "-e", "sched:sched_wakeup",
        ]  # fmt: skip
        self.futex = caps.has("futex_tracepoints")
        if self.futex:
            events += ["-e", "syscalls:sys_enter_futex", "-e", "syscalls:sys_exit_futex"]
        disk_cap = min(MAX_BYTES, max(16 * 2**20, ctx.options.max_bundle_bytes // 4))
        events_cap = capture_budget(ctx.options) * BYTES_PER_EVENT
        self.by_budget = events_cap < disk_cap
        max_bytes = min(disk_cap, events_cap)
        self.rec = PerfRecord(
            ctx,
            self.perf,
            "sched",
            events,
            max_bytes,
            ring_pages(RING_BYTES),
            max_seconds=MAX_SECONDS,
        )
        self.rec.start()

    def progress(self) -> str:
        rec = self.rec
        if rec is not None and self.by_budget and not rec.running() and rec.capped():
            return f"{self.name} done (its event budget's {_size(rec.max_bytes)})"
        return super().progress()

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        rec = self.rec
        caps = self.caps
        assert rec is not None and caps is not None
        rec.wait(timeout)
        stopped = rec.ended_s()  # before the recording is converted and removed
        details: dict[str, Any] = {
            "events": ["switch-events", "sched:sched_switch (fp call chains)", "sched:sched_wakeup"]
            + (["syscalls:sys_enter_futex", "syscalls:sys_exit_futex"] if self.futex else []),
            "futex": self.futex,
            "max_bytes": rec.max_bytes,
            "max_seconds": MAX_SECONDS,
            "recorded_bytes": rec.size_bytes(),
            "event_budget": capture_budget(ctx.options),
        }
        files = [rec.stderr_rel]
        summary = SchedSummary()
        try:
            if rec.size_bytes() == 0:
                return self.record(CollectorStatus.FAILED, no_recording(rec), files, **details)
            files.append(rec.script_stderr_rel)
            fields = "tid,cpu,time,event,ip,sym,dso,trace"
            tool, no_demangle = demangling(details)
            extra = ["--show-switch-events", "--show-lost-events", *no_demangle]
            budget = details["event_budget"]
            with contextlib.closing(rec.script(fields, extra, SCRIPT_TIMEOUT)) as lines:
                counts = write_tables(ctx, lines, summary, budget, tool, rec.namer())
            rec.named_here(details)
        finally:
            rec.cleanup()
        chunks, error = rec.script_warnings()
        lost = summary.lost or chunks  # LOST records count events; else perf's chunk count
        first = None if summary.first_t is None else round(summary.first_t - ctx.t0, 3)
        last = None if summary.last_t is None else round(summary.last_t - ctx.t0, 3)
        details.update(
            counts,
            lost_events=lost,
            first_s=first,
            last_s=last,
            threads=len(summary.threads),
            switch_ins=summary.switch_ins,
            sleeps_resumed=summary.sleeps_resumed,
            wakeups_seen=summary.wakeups_seen,
        )
        tables = ["sched/offcpu.csv", "sched/futex.csv", "sched/stacks.csv", "sched/offcpu.folded"]
        # the threads perf never traced (a trace cut by its budget or cap did not show all
        # it holds: not judged then)
        gap = (
            ""
            if summary.cut or rec.capped()
            else self.attach_gap(ctx, summary.threads, 0.05, "scheduler events", details)
        )
        if summary.events == 0:
            nothing = (
                "no scheduler events: no thread of the target was switched on or off a CPU "
                "(an idle target)"
            )
            unseen = f": {gap}" if gap else ""
            return self.nothing_recorded(
                ctx, rec, error, nothing, files + tables, details, unseen=unseen
            )
        files += tables
        problems: list[str] = [gap] if gap else []
        notes = [left_mangled(details)] if summary.mangled else []
        self._limits(summary, details, stopped, problems, notes)
        window = ctx.window()
        if window > MAX_SECONDS + 1:
            problems.append(f"recorded the first {MAX_SECONDS:.0f} s of the {window:.0f} s window")
        if not self.futex:
            problems.append(f"no futex tracepoints: {caps.reason('futex_tracepoints')}")
        return self.conclude(ctx, problems, files, details, lost, summary.events, notes)

    def _limits(
        self,
        summary: SchedSummary,
        details: dict[str, Any],
        stopped: float | None,
        problems: list[str],
        notes: list[str],
    ) -> None:
        """What bounded the trace: the event budget (a note, by design) or a size cap that
        left events out (a problem), and the measured bytes per event in ``details``."""
        rec = self.rec
        assert rec is not None
        last, budget = details["last_s"], details["event_budget"]
        if summary.cut:
            details["converted_until_s"] = last
            notes.append(
                f"converted the first {budget:,} events (to {last} s): the rest of the "
                f"recording was left out to bound the time to the verdict"
            )
        if rec.capped() and self.by_budget:
            # its last event, where all were read: perf starved of CPU reaches its cap (and
            # writes the file) late, after the events it holds
            if not summary.cut and last is not None:
                stopped = last if stopped is None else min(stopped, last)
            details["traced_until_s"] = stopped
            at = f", {stopped} s into the capture" if stopped is not None else ""
            notes.append(
                f"the trace stopped at {_size(rec.max_bytes)}, what its {budget:,}-event "
                f"budget needs{at}: the rest of the window was not traced, so that the "
                f"service did not pay for tracing it"
            )
        elif rec.capped():
            details["cut_at_s"] = last
            problems.append(
                f"the recording reached its {_size(rec.max_bytes)} cap (--max-size) at "
                f"{last} s: events after that are missing"
            )
        if not summary.cut and summary.events:  # measured, for BYTES_PER_EVENT
            details["bytes_per_event"] = round(details["recorded_bytes"] / summary.events)


def write_tables(
    ctx: CaptureContext,
    lines: Iterable[str],
    summary: SchedSummary,
    budget: int | None = None,
    demangle_with: str | None = None,
    namer: FrameNamer | None = None,
) -> dict[str, int]:
    """Stream the converted rows of the first ``budget`` events (all without one) into
    sched/*.csv; return row counts (``summary.cut`` says whether events were left out).
    ``demangle_with``: ``c++filt`` for a ``--no-demangle`` script (formats/demangle.py)."""
    w = ctx.writer
    t0 = ctx.t0
    table = StackTable()
    folded: dict[tuple[str, ...], float] = {}
    n_off = n_futex = 0
    with w.open_text("sched/offcpu.csv") as f_off, w.open_text("sched/futex.csv") as f_fx:
        off = guarded_csv_writer(f_off)
        fx = guarded_csv_writer(f_fx)
        off.writerow(OFFCPU_COLUMNS)
        fx.writerow(FUTEX_COLUMNS)
        for row in convert(_stop_at(parse_script(lines, namer), budget, summary), summary):
            stack = tuple(reversed(row.stack))
            sid = table.intern(stack) if stack else -1
            if isinstance(row, OffCpu):
                n_off += 1
                off.writerow([_r(row.t - t0), row.tid, _r(row.cpu), row.state, _r(row.dur),
                              _r(row.cpu_in), _r(row.runq), _r(row.waker), sid])  # fmt: skip
                if row.dur and row.state[:1] != "R":
                    key = (ThreadFrame(row.tid).format(), f"off-CPU ({row.state})", *stack)
                    folded[key] = folded.get(key, 0.0) + row.dur * 1000
            elif isinstance(row, FutexWait):
                n_futex += 1
                fx.writerow([_r(row.t - t0), row.tid, hex(row.uaddr), futex_cmd(row.op),
                             _r(row.dur), _r(row.ret), int(row.blocked), _r(row.waker),
                             _r(None if row.wake_t is None else row.wake_t - t0), sid])  # fmt: skip
    renames = demangle_table(table, demangle_with)
    summary.mangled = renames is None
    if renames:
        folded = {tuple(renames.get(f, f) for f in key): ms for key, ms in folded.items()}
    with w.open_text("sched/stacks.csv") as fh:
        cw = guarded_csv_writer(fh)
        cw.writerow(["stack_id", "frames"])
        for i, stack in enumerate(table.stacks):
            cw.writerow([i, ";".join(stack)])
    w.write_text("sched/offcpu.folded", format_folded(folded.items()))
    return {
        "offcpu_rows": n_off,
        "futex_rows": n_futex,
        "stacks": len(table.stacks),
    }


def _stop_at(
    events: Iterator[PerfEvent], budget: int | None, summary: SchedSummary
) -> Iterator[PerfEvent]:
    """``events`` up to ``budget`` of them; ``summary.cut`` when there was one more."""
    for i, ev in enumerate(events):
        if budget is not None and i >= budget:
            summary.cut = True
            return
        yield ev
