"""Python stacks with py-spy.

Default mode, chosen from measurement (``docs/performance.md``, ``../shared`` platform
notes): ``--nonblocking`` at 100 Hz with ``--threads --idle``. Blocking mode ptrace-stops
every thread at every sample, which costs 3-15% throughput (16-32% with ``--native``) and
falls far behind on oversubscribed targets, exactly the case we diagnose; native stacks
come from perf instead, which costs nothing measurable. ``--native`` opts back into
blocking py-spy with native frames.

py-spy writes ``chrometrace`` (timestamped stack changes, merged while a thread's stack
stays the same) in chunks of at most ``CHUNK_SECONDS``, so py-spy's memory stays bounded
and a capture cut short keeps every finished chunk. After the capture the chunks are
converted, one chunk in memory at a time, into ``python/intervals.csv`` +
``python/stacks.csv`` (the per-sample form the analysis reads), ``python/stacks.folded``
and ``python/python.speedscope.json`` (:class:`PythonTables`).

The ``gil`` collector runs a second py-spy with ``--gil`` (``raw`` format): the samples
in which each thread held the GIL.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import threading
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.bundle.writer import guarded_csv_writer
from diagnose.collect.base import CaptureContext, Collector, CollectorFailed, covered_most
from diagnose.collect.budget import REPLAN_AFTER_S, REPLAN_MIN_LEFT_S, Plan, replan
from diagnose.collect.child import Child
from diagnose.collect.linecalls import line_calls
from diagnose.collect.toolcpu import cpu_of
from diagnose.formats.pyspy import (
    FormatError,
    chrometrace_intervals,
    explain_failure,
    parse_raw,
    parse_summary,
)
from diagnose.formats.speedscope import write_evented_speedscope
from diagnose.formats.stacks import Interval, StackTable, ThreadFrame, format_folded
from diagnose.spawn import run as spawn_run

CHUNK_SECONDS = 60.0
#: once py-spy samples, how often its runner looks at it (and at a stop or the deadline)
SETTLED_POLL_S = 0.25
#: what py-spy prints (to stdout, into the same file as its stderr) once it has attached
#: and samples: the moment the collector records
SAMPLING = "py-spy> Sampling process"


def find_pyspy() -> str | None:
    """py-spy next to this Python (a virtualenv's bin/) or on PATH."""
    local = Path(sys.executable).parent / "py-spy"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which("py-spy")


def pyspy_version(binary: str) -> str:
    import subprocess

    try:
        out = spawn_run([binary, "--version"], timeout=10)
        return str(out.stdout).strip().replace("py-spy ", "")
    except (OSError, subprocess.SubprocessError):
        return "?"


class _ChunkedPySpy:
    """Runs py-spy in consecutive chunks until the deadline or a stop.

    ``check``: called once, :data:`~diagnose.collect.budget.REPLAN_AFTER_S` after py-spy
    starts sampling, with the cores py-spy used since; True ends the chunk there (the next
    starts at once, with the argv then in force: a lower rate)."""

    def __init__(self, name: str, argv_for: object, ctx: CaptureContext, suffix: str) -> None:
        self.name = name
        self.argv_for = argv_for  # callable(seconds, output path) -> argv
        self.ctx = ctx
        self.suffix = suffix
        self.chunks: list[tuple[str, float, float, int | None, str]] = []
        self.child: Child | None = None
        self._stop = threading.Event()
        self.recording_at: float | None = None  # monotonic time py-spy said it samples
        self.settled = threading.Event()  # sampling, or the first py-spy ended without
        self.thread = threading.Thread(target=self._run, name=f"diagnose-{name}", daemon=True)
        self.check: Callable[[float], bool] | None = None
        self._check_at = math.inf  # monotonic time of the cost check (inf: none pending)
        self._check_cpu: float | None = None  # py-spy's CPU seconds when it began sampling

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        """Ask the runner to end now, without waiting: it stops py-spy within 0.1 s (SIGINT,
        grace, SIGKILL). Waiting here held back the SIGINT of the collectors after it
        (perf went on sampling up to 1.5 s past the window)."""
        self._stop.set()

    def _run(self) -> None:
        try:
            self._chunks()
        finally:
            self.settled.set()

    def _chunks(self) -> None:
        ctx = self.ctx
        index = 0
        while not self._stop.is_set() and not ctx.stop_event.is_set():
            left = ctx.deadline - time.monotonic()
            if left < 0.5:
                break
            secs = min(left, CHUNK_SECONDS)
            rel = f"python/{self.name}-{index:03d}.{self.suffix}"
            out = ctx.writer.path(rel)
            err = ctx.writer.path(f"python/{self.name}-{index:03d}.stderr")
            argv = self.argv_for(max(1, math.ceil(secs) + 1), out)  # type: ignore[operator]
            spawn_t = time.monotonic() - ctx.t0
            child = Child(argv, err, label=f"py-spy {self.name}")
            self.child = child
            chunk_cap = time.monotonic() + CHUNK_SECONDS
            rc: int | None = None
            while True:
                if self.settled.is_set():
                    # one timed wait on an event, not Popen.wait's polling (about 70 wake-ups
                    # a second, 0.006 of a core per py-spy): a stop, the window's end or
                    # py-spy's exit is seen within SETTLED_POLL_S
                    until = min(chunk_cap, ctx.deadline, self._check_at) - time.monotonic()
                    self._stop.wait(max(0.0, min(SETTLED_POLL_S, until)))
                    rc = child.poll()
                else:
                    rc = child.wait(0.02)
                if rc is not None:
                    child.wait()  # reaped: forget it
                    break
                if not self.settled.is_set() and SAMPLING in child.stderr_text(4096):
                    self.recording_at = time.monotonic()
                    self.settled.set()
                    self._arm_check(child.pid)
                if self._checked(child.pid):
                    rc = child.stop()
                    break
                if (
                    self._stop.is_set()
                    or ctx.stop_event.is_set()
                    or time.monotonic() >= min(chunk_cap, ctx.deadline)
                    or ctx.target_exited.is_set()
                ):
                    rc = child.stop()
                    break
            end_t = time.monotonic() - ctx.t0
            self.settled.set()  # py-spy ended: it samples no more, whatever it said
            if index > 0 and self._stopped() and not self._wrote(rel):
                # a later py-spy (restarted at a lower rate, or the next chunk) stopped (Ctrl-C, the
                # window's end) before it wrote anything: the chunks before hold the samples
                ctx.writer.unlink(rel)  # an empty file, if it made one
                break
            self.chunks.append((rel, spawn_t, end_t, rc, child.stderr_text()))
            index += 1
            if rc not in (0, None, -2, 130) and not ctx.writer.is_file(rel):
                break  # py-spy failed: starting again would fail again
            if ctx.target_exited.is_set():
                break

    def _stopped(self) -> bool:
        return self._stop.is_set() or self.ctx.stop_event.is_set()

    def _wrote(self, rel: str) -> bool:
        w = self.ctx.writer
        return w.is_file(rel) and w.size_of(rel) > 0

    def _arm_check(self, pid: int) -> None:
        if self.check is not None and not self.chunks:  # the first chunk only
            self._check_cpu = cpu_of(f"/proc/{pid}/stat")
            self._check_at = time.monotonic() + REPLAN_AFTER_S

    def _checked(self, pid: int) -> bool:
        """At the check's time: whether ``check`` ends this chunk (py-spy's cores so far)."""
        now = time.monotonic()
        if now < self._check_at:
            return False
        start, begun = self._check_cpu, self._check_at - REPLAN_AFTER_S
        self._check_at = math.inf  # once
        cpu = cpu_of(f"/proc/{pid}/stat")
        if self.check is None or start is None or cpu is None:
            return False
        if self.ctx.deadline - now < REPLAN_MIN_LEFT_S:
            return False  # too little window left for a restart to pay
        return self.check((cpu - start) / max(1e-3, now - begun))

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.stop()
            self.thread.join(5)


class _PySpyBased(Collector):
    """What both py-spy collectors share: a Python target, the py-spy binary, a runner, and
    a rate the budget may lower once py-spy's real cost is measured."""

    #: the plan's rate this sampler runs at (collect/budget.py: "pyspy" or "gil")
    key = ""
    rate = 100

    def __init__(self) -> None:
        self.binary: str | None = None
        self.runner: _ChunkedPySpy | None = None
        #: (seconds since t0 from which, rate): the first, and one more when the cost
        #: check lowered it
        self.rates: list[tuple[float, int]] = []
        self.measured_cores: float | None = None  # py-spy's cores at the cost check

    def probe(self, ctx: CaptureContext) -> str | None:
        if not ctx.target.is_python:
            return (
                f"PID {ctx.target.pid} ({ctx.target.comm}) is not a Python process: "
                "no Python stacks (native stacks come from perf)"
            )
        self.binary = find_pyspy()
        if self.binary is None:
            # py-spy is a dependency of diagnose: its absence is a broken installation
            raise CollectorFailed("py-spy is not installed (pip install py-spy): no Python stacks")
        return None

    slow_start = True

    def wait_recording(self, until: float) -> float | None:
        """Until py-spy says it samples (it attaches first: longer on a busy host)."""
        runner = self.runner
        if runner is None:
            return None
        while not runner.settled.wait(0.1):
            if time.monotonic() >= until or runner.ctx.stop_event.is_set():
                break
        return runner.recording_at

    def stop(self) -> None:
        if self.runner is not None:
            self.runner.stop()

    def _run(self, ctx: CaptureContext, runner: _ChunkedPySpy, keep: bool) -> None:
        """Start ``runner`` at ``self.rate``, its cost checked against the plan the capture
        started with (unless the rate is ``keep``: the user's)."""
        self.runner = runner
        self.rates = [(0.0, self.rate)]
        planned = ctx.plan
        if planned is not None and not keep:
            runner.check = lambda cores: self._replan(ctx, planned, cores)
        runner.start()

    def _replan(self, ctx: CaptureContext, planned: Plan, cores: float) -> bool:
        """The measured cost against the sampler's share of the budget: lower the rate when
        it is over (the runner then restarts py-spy, whose argv reads ``self.rate``)."""
        at = time.monotonic() - ctx.t0 - ctx.window_start_s()
        self.measured_cores = round(cores, 4)
        got = replan(planned, self.key, cores, at)
        if got is None:
            return False
        self.rate, why = got
        with _PLAN_LOCK:  # the other py-spy's check may lower its own rate at the same time
            if ctx.plan is not None:
                ctx.plan = ctx.plan.lowered(self.key, self.rate, why)
        self.rates.append((round(time.monotonic() - ctx.t0, 3), self.rate))
        return True

    def rate_details(self, ctx: CaptureContext) -> dict[str, object]:
        """The rate the sampler ended at (the lowest), and why it is below the one asked."""
        details: dict[str, object] = {"rate_hz": self.rate}
        if self.measured_cores is not None:
            details["measured_cores"] = self.measured_cores
        if len(self.rates) > 1:
            details["rates_hz"] = [[t, r] for t, r in self.rates]
        if self.rate != ctx.options.rate:
            note = lowered_note(ctx, ctx.options.rate)
            why = dict(ctx.plan.remeasured) if ctx.plan is not None else {}
            if self.key in why:
                note += f"; {why[self.key]}"
            details["rate_note"] = note
        return details

    def rate_at(self, t: float) -> int:
        """The rate a chunk started at ``t`` seconds since t0 sampled at."""
        return [r for since, r in self.rates if since <= t][-1] if self.rates else self.rate


#: ctx.plan is replaced, not changed in place; both py-spy runners may replace it at once
_PLAN_LOCK = threading.Lock()


def lowered_note(ctx: CaptureContext, asked: int) -> str:
    """Why a sampler runs below the rate asked for (the collector's ``rate_note``)."""
    budget, threads = (ctx.plan.budget_cores, ctx.plan.threads) if ctx.plan else (0.0, 0)
    return (
        f"lowered from {asked} Hz to keep diagnose within its CPU budget ({budget:g} cores; "
        f"{threads} threads: a sampler's cost grows with threads x rate); --rate keeps a "
        "rate, --cpu-budget changes the budget"
    )


class PySpyCollector(_PySpyBased):
    name = "pyspy"
    description = "Python stacks of every thread (py-spy, nonblocking by default)"
    key = "pyspy"

    def _argv(self, ctx: CaptureContext) -> object:
        binary = self.binary
        assert binary is not None
        opts = ctx.options

        def argv(seconds: int, out: Path) -> list[str]:
            a = [
                binary,
                "record",
                "--pid",
                str(ctx.target.pid),
                "--threads",
                "--idle",
                "--rate",
                str(self.rate),
                "--duration",
                str(seconds),
                "--format",
                "chrometrace",
                "--output",
                str(out),
            ]
            if opts.native:
                a.append("--native")
            elif opts.nonblocking:
                a.append("--nonblocking")
            return a

        return argv

    def start(self, ctx: CaptureContext) -> None:
        self.rate = ctx.rates().pyspy
        runner = _ChunkedPySpy("trace", self._argv(ctx), ctx, "json")
        self._run(ctx, runner, keep=ctx.options.rate_chosen)

    def progress(self) -> str:
        r = self.runner
        if r is None:
            return ""
        return f"py-spy {'running' if r.thread.is_alive() else 'done'}"

    def _details(self, ctx: CaptureContext) -> dict[str, object]:
        """The record's details before conversion: mode, rates and why they were lowered."""
        runner = self.runner
        assert runner is not None
        mode = (
            "native (blocking)"
            if ctx.options.native
            else ("nonblocking" if ctx.options.nonblocking else "blocking")
        )
        return {
            "mode": mode,
            "chunks": len(runner.chunks),
            "py_spy": pyspy_version(self.binary or "py-spy"),
            # the rate py-spy ended at: the lowest (the analysis's joins take its period)
            **self.rate_details(ctx),
        }

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        runner = self.runner
        assert runner is not None
        runner.join(timeout)
        details = self._details(ctx)
        tables = PythonTables(ctx)
        problems: list[str] = []
        samples_total = 0
        errors_total = 0
        covered = 0.0
        converted: list[str] = []  # raw chunks whose every interval is in the tables
        for rel, spawn_t, _end_t, rc, stderr in runner.chunks:
            samples, errors = parse_summary(stderr)
            samples_total += samples or 0
            errors_total += errors or 0
            if not ctx.writer.is_file(rel) or ctx.writer.size_of(rel) == 0:
                problems.append(explain_failure(stderr, ctx.target.pid, rc))
                continue
            try:  # one chunk (at most CHUNK_SECONDS) in memory at a time
                events = json.loads(ctx.writer.read_text(rel))
                chunk_iv, chunk_names = chrometrace_intervals(events, offset=spawn_t)
            except (json.JSONDecodeError, FormatError, OSError, RecursionError) as exc:
                problems.append(f"{rel}: unreadable py-spy output ({exc})")
                continue
            del events
            tables.add(chunk_iv, chunk_names)
            converted.append(rel)
            if chunk_iv:  # the time py-spy really sampled, start-up excluded
                covered += max(i.end for i in chunk_iv) - min(i.start for i in chunk_iv)
        details["samples"] = samples_total
        details["sample_errors"] = errors_total
        files = [c[0] for c in runner.chunks if ctx.writer.is_file(c[0])]
        if not tables.intervals:
            tables.discard()
            reason = problems[0] if problems else "py-spy recorded no samples"
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        files += tables.finish()
        # the tables hold what the converted chunks did: the raw trace (about a third of a
        # bundle) goes, once the tables are written; a chunk that did not convert stays
        for rel in converted:
            ctx.writer.unlink(rel)
        files = [f for f in files if f not in converted]
        window = ctx.window()
        details["covered_s"] = round(covered, 2)
        if problems:
            return self.record(CollectorStatus.PARTIAL, "; ".join(problems[:3]), files, **details)
        if ctx.target_exited.is_set():
            return self.record(
                CollectorStatus.PARTIAL, "the target exited during the capture", files, **details
            )
        # py-spy needs a moment to attach (longer on a loaded host): only a real gap counts
        if not covered_most(covered, window) and not ctx.stop_event.is_set():
            return self.record(
                CollectorStatus.PARTIAL,
                f"py-spy covered {covered:.1f} s of the {window:.1f} s window",
                files,
                **details,
            )
        return self.record(CollectorStatus.OK, "", files, **details)


class PythonTables:
    """Streams py-spy's intervals, chunk by chunk, into the bundle's Python tables:
    intervals.csv, stacks.csv, threads.csv, stacks.folded, python.speedscope.json.

    Memory stays bounded over a long capture: rows go to disk as they come; what is kept is
    one entry per distinct stack, thread and (thread, stack) pair, and 20 bytes per
    interval (start, end, stack id) for the speedscope file, written one thread at a time.
    """

    def __init__(self, ctx: CaptureContext) -> None:
        self.ctx = ctx
        self.table = StackTable()
        self.names: dict[int, str] = {}
        self.folded: dict[tuple[int, int], float] = {}
        self.spans: dict[int, tuple[array[float], array[float], array[int]]] = {}
        self.intervals = 0
        self._fh: IO[str] | None = None
        self._csv: Any = None

    def add(self, intervals: list[Interval], names: dict[int, str]) -> None:
        self.names.update(names)
        if not intervals:
            return
        if self._fh is None:
            self._fh = self.ctx.writer.open_text("python/intervals.csv")
            self._csv = guarded_csv_writer(self._fh)
            self._csv.writerow(["tid", "start", "end", "stack_id"])
        for iv in intervals:
            sid = self.table.intern(iv.stack)
            self._csv.writerow([iv.tid, round(iv.start, 4), round(iv.end, 4), sid])
            key = (iv.tid, sid)
            self.folded[key] = self.folded.get(key, 0.0) + (iv.end - iv.start) * 1000.0
            starts, ends, sids = self.spans.setdefault(iv.tid, (array("d"), array("d"), array("l")))
            starts.append(iv.start)
            ends.append(iv.end)
            sids.append(sid)
        self.intervals += len(intervals)
        self._fh.flush()

    def discard(self) -> None:
        if self._fh is not None:
            self._fh.close()

    def finish(self) -> list[str]:
        assert self._fh is not None
        self._fh.close()
        w = self.ctx.writer
        with w.open_text("python/stacks.csv") as fh:
            cw = guarded_csv_writer(fh)
            cw.writerow(["stack_id", "frames"])
            for sid, stack in enumerate(self.table.stacks):
                cw.writerow([sid, ";".join(f.replace(";", ":") for f in stack)])
        with w.open_text("python/threads.csv") as fh:
            cw = guarded_csv_writer(fh)
            cw.writerow(["tid", "name"])
            for tid, name in sorted(self.names.items()):
                cw.writerow([tid, name])
        stacks = self.table.stacks
        w.write_text(
            "python/stacks.folded",
            format_folded(
                ((ThreadFrame(tid, self.names.get(tid, "")).format(), *stacks[sid]), weight)
                for (tid, sid), weight in self.folded.items()
            ),
        )
        w.write_stream(
            "python/python.speedscope.json",
            lambda fh: write_evented_speedscope(
                fh,
                (
                    (tid, self.names.get(tid, ""), self._thread_intervals(tid))
                    for tid in sorted(self.spans)
                ),
                name=f"Python stacks of PID {self.ctx.target.pid}",
            ),
        )
        target = self.ctx.target
        calls = line_calls(stacks, target.pid, target.uid)
        w.write_json("python/calls.json", {k: [list(c) for c in v] for k, v in calls.items()})
        return [
            "python/intervals.csv",
            "python/stacks.csv",
            "python/threads.csv",
            "python/stacks.folded",
            "python/python.speedscope.json",
            "python/calls.json",
        ]

    def _thread_intervals(self, tid: int) -> list[Interval]:
        starts, ends, sids = self.spans[tid]
        stacks = self.table.stacks
        return [
            Interval(tid, a, b, stacks[sid]) for a, b, sid in zip(starts, ends, sids, strict=True)
        ]


class GilCollector(_PySpyBased):
    """Which thread held the GIL, sampled by a second py-spy with ``--gil``."""

    name = "gil"
    description = "samples in which each thread held the GIL (py-spy --gil)"
    key = "gil"

    def probe(self, ctx: CaptureContext) -> str | None:
        if ctx.target.is_python and ctx.options.native:
            return "not run together with --native (two blocking py-spy would double the cost)"
        return super().probe(ctx)

    def start(self, ctx: CaptureContext) -> None:
        binary = self.binary
        assert binary is not None
        self.rate = ctx.rates().gil

        def argv(seconds: int, out: Path) -> list[str]:
            return [
                binary, "record", "--pid", str(ctx.target.pid), "--threads", "--gil", "--full-filenames",
                "--nonblocking", "--rate", str(self.rate), "--duration", str(seconds),
                "--format", "raw", "--output", str(out),
            ]  # fmt: skip

        # the GIL sampler's rate is lowered by the budget whatever --rate says (the plan's)
        self._run(ctx, _ChunkedPySpy("gil", argv, ctx, "folded"), keep=False)

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        runner = self.runner
        assert runner is not None
        runner.join(timeout)
        rows: list[tuple[tuple[str, ...], float]] = []
        samples_total = 0
        problems = []
        files = []
        for rel, spawn_t, _e, rc, stderr in runner.chunks:
            # a chunk after the rate was lowered: each of its samples counts as many as the
            # first rate would have taken in its time, so that shares are of time, not of
            # samples (gil.folded's counts are at the first rate; gil.json has py-spy's own)
            weight = self.rates[0][1] / self.rate_at(spawn_t) if self.rates else 1.0
            samples, _errors = parse_summary(stderr)
            if samples is None or not ctx.writer.is_file(rel):
                problems.append(explain_failure(stderr, ctx.target.pid, rc))
                continue
            samples_total += samples
            files.append(rel)
            for tid, name, stack, count in parse_raw(ctx.writer.read_text(rel)):
                rows.append(((ThreadFrame(tid, name).format(), *stack), count * weight))
        details: dict[str, object] = {"samples": samples_total, **self.rate_details(ctx)}
        window = ctx.window()
        ran = sum(end - spawn for _r, spawn, end, _rc, _e in runner.chunks)
        if samples_total == 0 and not (problems or not files) and not covered_most(ran, window):
            problems.append(
                f"py-spy --gil ran {ran:.1f} s of the {window:.1f} s window (a slow start on a "
                "busy host) and saw no GIL holder"
            )
        if samples_total == 0 and (problems or not files):
            reason = problems[0] if problems else "py-spy recorded nothing"
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        ctx.writer.write_text("python/gil.folded", format_folded(rows))
        ctx.writer.write_json("python/gil.json", {"samples": samples_total})
        for rel in files:  # every chunk's samples are in gil.folded now
            ctx.writer.unlink(rel)
        files = ["python/gil.folded", "python/gil.json"]
        notes = problems[:2]
        if ctx.target_exited.is_set():
            notes.append("the target exited during the capture")
        status = CollectorStatus.PARTIAL if notes else CollectorStatus.OK
        if samples_total == 0:
            # py-spy sampled for the whole window ("Samples: 0 Errors: 0"): an idle target
            notes.append("no thread held the GIL in any sample (no Python code ran)")
        return self.record(status, "; ".join(notes), files, **details)
