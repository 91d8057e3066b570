"""Running ``perf record`` on the target and reading it back with ``perf script``.

Both run through :class:`diagnose.collect.child.Child`: their own session (a Ctrl-C reaches
diagnose, which stops them in order), SIGINT from the kernel if diagnose dies (perf then
writes what it has and exits), and a bounded life of their own: ``perf record ... --
sleep N`` ends after the capture window plus a margin whatever happens to diagnose.

Common options, and why:

- ``-k CLOCK_MONOTONIC``: event times on the clock of ``capture.monotonic_start``;
- ``--no-bpf-event``: otherwise perf waits up to 1 s at exit for its BPF side-band thread;
- ``-N -B``: no build-id cache; perf would otherwise copy every library the target maps
  into ``~/.debug`` (tens of MB here, gigabytes with libtorch) and post-process them at exit;
- ``-m PAGES``: the ring buffer per CPU; ``--max-size``: perf stops writing at this size
  (its stderr then says "perf size limit reached", which the collector reports);
- ``-D 1 --sample-cpu`` (where the probe found it works): perf sets up with its events
  off (reading kallsyms, the target's maps: 1.6-3 s on a busy 2-core host), turns them on
  1 ms later and says "Events enabled" on stderr. That line is when perf records
  (:meth:`PerfRecord.wait_recording`): the session opens the measured window only then.
  (``--control`` with an ``enable``/``ack`` pipe would say the same, but perf 6.1 fails
  with "Thread and evlist pollfd index mismatch" on a multi-threaded ``-p`` target.)

**A perf that busy-loops is stopped.** When a thread of the target that was there when perf
attached exits, perf 6.1 polls that thread's event in a tight loop: a whole core per perf
process until it ends (:mod:`diagnose.collect.perf.pollfix` says why, and prevents it where
a C compiler is at hand). A watchdog reads each perf's CPU time and sleeps (voluntary
context switches) every :data:`SPIN_CHECK_S`; a perf that used :data:`SPIN_CORES` or more
without sleeping at :data:`SPIN_CHECKS` checks in a row, once it records, is stopped: what
it recorded until then is kept and converted, and the collector says when and why it
stopped. (A recording perf used 0.005 cores and slept 7.5 times a second beside a torch
service, tracing 90,000 scheduler events a second; a looping one never sleeps.)

The recording goes to a hidden file inside the bundle (so the disk budget counts it) and
is deleted once converted; a capture killed before that leaves it behind.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import threading
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import psutil

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.base import CaptureContext, Collector, covered_most
from diagnose.collect.child import Child
from diagnose.collect.perf import attach_gap, pollfix, symfs
from diagnose.collect.perf.probe import (
    EVENTS_ON,
    PerfCapabilities,
    capabilities_for,
    explain,
    unavailable_reason,
)
from diagnose.collect.procfs import parse_status
from diagnose.collect.toolcpu import cpu_of
from diagnose.formats.demangle import probe as demangler
from diagnose.formats.perf_script import FrameNamer

#: what a CPU-wide perf's command line names its target with (PerfRecord.marker)
TARGET_MARK = "DIAGNOSE_TARGET"
#: capability bits (linux/capability.h): either lets a process record CPU-wide events
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38

SIZE_LIMIT = re.compile(r"perf size limit reached \((\d+) KB\)")
WROTE = re.compile(r"Captured and wrote ([\d.]+) MB")
LOST_CHUNKS = re.compile(r"lost (\d+) chunks", re.I)
NO_PROCESS = re.compile(r"no such process", re.I)

#: the busy-loop watchdog (module docstring): a perf using this many cores or more ...
SPIN_CORES = 0.15
#: ... while it slept (voluntary context switches) at most this often between two checks
#: (a looping perf: never; one draining a torch service's scheduler trace: about 4 times)
SPIN_MAX_SLEEPS = 1
#: ... at this many checks in a row, this many seconds apart, is stopped
SPIN_CHECKS = 2
SPIN_CHECK_S = 0.5
#: a perf without -D says nothing when it records: its set-up (1.6-3 s on a busy 2-core host)
#: is not watched for this long
SETUP_S = 5.0


def ring_pages(per_cpu_bytes: int, total_bytes: int = 64 * 2**20) -> int:
    """perf's ``-m`` for a per-CPU ring buffer of ``per_cpu_bytes``, capped so that all the
    CPUs' buffers together stay under ``total_bytes`` (perf needs a power of two pages)."""
    cpus = os.cpu_count() or 1
    pages = max(16, min(per_cpu_bytes, total_bytes // cpus) // 4096)
    return 1 << (pages.bit_length() - 1)


def cpu_wide_allowed() -> bool:
    """May diagnose record CPU-wide events (``perf record -a``)? With CAP_PERFMON or
    CAP_SYS_ADMIN (root, outside a container that drops them), or where
    ``perf_event_paranoid`` allows every user (-1 or 0)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            eff = int(parse_status(fh.read()).get("CapEff", "0"), 16)
    except (OSError, ValueError):
        eff = 0
    if eff & ((1 << CAP_PERFMON) | (1 << CAP_SYS_ADMIN)):
        return True
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as fh:
            return int(fh.read().strip()) <= 0
    except (OSError, ValueError):
        return False


#: CPU-wide recording only where the target may run on at most this many CPUs: each CPU
#: samples whatever runs on it (filtered out afterwards), so the recording grows with them
CPU_WIDE_MAX_CPUS = 16


def target_cpus(pid: int) -> list[int]:
    """The CPUs the target may run on (its affinity: a cpuset, taskset), where they are at
    most :data:`CPU_WIDE_MAX_CPUS`; [] otherwise, or if unreadable."""
    try:
        cpus = sorted(os.sched_getaffinity(pid))
    except OSError:
        return []
    return cpus if len(cpus) <= CPU_WIDE_MAX_CPUS else []


class PerfRecord:
    """One ``perf record`` for the capture window: of the target's threads (``-p PID``), or
    of the CPUs the target may run on (``cpu_wide``: ``-a -C CPUS``, read back for the
    target's PID alone)."""

    def __init__(
        self,
        ctx: CaptureContext,
        perf: str,
        subdir: str,
        events: Sequence[str],
        max_bytes: int,
        mmap_pages: int,
        max_seconds: float | None = None,
        cpu_wide: bool = False,
    ) -> None:
        self.ctx = ctx
        cpus = target_cpus(ctx.target.pid) if cpu_wide else []
        #: -C's list where recording CPU-wide ([]: the target's threads, -p)
        self.cpus = ",".join(str(c) for c in cpus)
        self.perf = perf
        self.subdir = subdir
        self.events = list(events)
        self.max_bytes = max_bytes
        self.mmap_pages = mmap_pages
        self.max_seconds = max_seconds
        self.data: Path = ctx.writer.path(f"{subdir}/.perf.data")
        self.stderr_rel = f"{subdir}/perf-record.stderr"
        self.child: Child | None = None
        self.started_t = 0.0  # seconds since capture start: spawned, then recording (-D)
        self.recording_at: float | None = None  # monotonic time perf said it records
        self.namer_: symfs.Namer | None = None  # libraries named by diagnose (script)
        self.delayed = False  # run with -D: it says when it records
        #: the target's threads when perf was spawned (-p only): perf lists them as it
        #: starts, so a thread born after that and before its events were on may be missed
        self.tids_before: set[int] | None = None
        #: the threads born between then and the events coming on, read at that moment
        self.born_attaching: list[attach_gap.Untraced] = []
        self.rc: int | None = None
        self.target_cpu_at_start: float | None = None  # the target's CPU seconds then
        self.spun: tuple[float, float] | None = None  # (capture s, cores): stopped, looping
        self.poll_fix = ""  # "preloaded", or "none: why" (collect/perf/pollfix.py)
        self.kallsyms = "proc"  # or "snapshot": where perf read the kernel's symbols
        self.fix_inherited = False  # the fix built by the capture that started this one
        self.fix_cached = False  # the fix built by an earlier run, kept in diagnose's cache

    def argv(self) -> list[str]:
        window = self.ctx.remaining()
        if self.max_seconds is not None and self.max_seconds < window:
            seconds = max(1, math.ceil(self.max_seconds))  # a shorter window by design
        else:
            seconds = max(1, math.ceil(window) + 2)  # the window, plus a margin
        # --sample-cpu: with -D perf tracks side-band records (context switches) on a dummy
        # event of its own, whose records carry no CPU ([-01]) without it
        delay = ["-D", "1", "--sample-cpu"] if self.delayed else []
        return [
            self.perf, "record", "--no-bpf-event", "-N", "-B", "-k", "CLOCK_MONOTONIC",
            "-m", str(self.mmap_pages), "--max-size", f"{max(1, self.max_bytes // 1024)}K",
            *delay, *self.events, *self.scope(), "-o", str(self.data),
            "--", *self.marker(), "sleep", str(seconds),
        ]  # fmt: skip

    def marker(self) -> list[str]:
        """A CPU-wide perf names its target in its command line (``ps`` shows whom it
        records for; tests find it): ``env DIAGNOSE_TARGET=PID`` before its ``sleep``."""
        return ["env", f"{TARGET_MARK}={self.ctx.target.pid}"] if self.cpus else []

    def scope(self) -> list[str]:
        """What is recorded: the CPUs the target may run on, or its threads."""
        return ["-a", "-C", self.cpus] if self.cpus else ["-p", str(self.ctx.target.pid)]

    def start(self) -> None:
        if not self.cpus:
            self.tids_before = attach_gap.task_ids(self.ctx.target.pid)
        self.started_t = self.ctx.elapsed()
        self.target_cpu_at_start = target_cpu_seconds(self.ctx.target.pid)
        self.delayed = capabilities_for(self.ctx.t0).has("delay")
        lib = pollfix.preload()
        self.poll_fix = "preloaded" if lib else f"none: {pollfix.why_not()}"
        self.kallsyms = "snapshot" if lib and pollfix.kallsyms() else "proc"
        self.fix_inherited = bool(lib) and pollfix.inherited()
        self.fix_cached = bool(lib) and pollfix.cached()
        self.child = Child(
            self.argv(),
            self.ctx.writer.path(self.stderr_rel),
            label=f"perf record {self.subdir}",
            env=pollfix.environment(lib, self.ctx.target.pid) if lib else None,
            pass_fds=pollfix.fds() if lib else (),
        )
        threading.Thread(
            target=self._watch, name=f"diagnose-perf-watch-{self.subdir}", daemon=True
        ).start()

    def _watch(self) -> None:
        """Stop this perf if it busy-loops (module docstring), once it records: its set-up
        (kallsyms, the target's maps) is legitimately busy."""
        child = self.child
        assert child is not None
        stat, status = f"/proc/{child.pid}/stat", f"/proc/{child.pid}/status"
        last: tuple[float, float, int] | None = None  # (monotonic, CPU s, sleeps)
        over = 0
        while child.poll() is None and not self.ctx.stop_event.wait(SPIN_CHECK_S):
            now = time.monotonic()
            if now >= self.ctx.deadline or child.poll() is not None:
                return  # the window is over: perf writes its file, which is busy too
            if self.recording_at is None and (self.delayed or now < child.started + SETUP_S):
                continue  # setting up: with -D until perf says it records, else SETUP_S
            cpu, sleeps = cpu_of(stat), _sleeps(status)
            if cpu is None or sleeps is None:
                return
            if last is not None and now > last[0]:
                cores = (cpu - last[1]) / (now - last[0])
                # a perf draining a busy trace uses CPU too, but sleeps in poll() between
                # wake-ups; the loop never sleeps
                looping = cores >= SPIN_CORES and sleeps - last[2] <= SPIN_MAX_SLEEPS
                over = over + 1 if looping else 0
                if over >= SPIN_CHECKS:
                    self.spun = (round(self.ctx.elapsed(), 2), round(cores, 2))
                    self.stop()
                    return
            last = (now, cpu, sleeps)

    def spin_problem(self) -> str:
        """The collector's reason when the watchdog stopped this perf ('' when it did not)."""
        if self.spun is None:
            return ""
        at = max(0.0, self.spun[0] - self.ctx.window_start_s())
        return (
            f"perf was stopped {at:.1f} s into the window: it used {self.spun[1]:.2f} cores "
            f"busy-looping after a thread of the target exited (perf polls an exited "
            f"thread's event without end); what it recorded until then is kept"
        )

    def untraced(self, seen: set[int], min_cpu_s: float) -> list[attach_gap.Untraced]:
        """The threads born while perf attached that it never traced (attach_gap.py): none
        of them in ``seen``, each with ``min_cpu_s`` of CPU or more since the events came
        on. Only a ``-p`` perf run with ``-D`` says when that was; a CPU-wide one sees all."""
        if not self.born_attaching or self.tids_before is None:
            return []
        now = attach_gap.born_since(self.ctx.target.pid, self.tids_before, None, self.ctx.t0)
        return attach_gap.missed(self.born_attaching, now, seen, min_cpu_s)

    def never_recorded(self) -> bool:
        """perf ran with ``-D`` and never said its events were on: it recorded nothing
        because it had not begun (a capture stopped while perf was still starting)."""
        child = self.child
        return self.delayed and child is not None and EVENTS_ON not in child.stderr_text(4096)

    def wait_recording(self, until: float) -> float | None:
        """Wait (until monotonic ``until`` at most, or a stop) for perf to say its events
        are on; the monotonic time it did, or None (not yet, perf exited, or a perf
        without ``-D``: then the window counts from the spawn)."""
        child = self.child
        if self.recording_at is not None or child is None or not self.delayed:
            return self.recording_at
        while True:
            if EVENTS_ON in child.stderr_text(4096):
                # when perf wrote the line (it writes nothing more until it ends), not when
                # it was seen: the session may have been waiting for another collector
                self.recording_at = time.monotonic()
                with contextlib.suppress(OSError):
                    written = os.stat(self.ctx.writer.path(self.stderr_rel)).st_mtime
                    self.recording_at -= max(0.0, time.time() - written)
                self.started_t = self.recording_at - self.ctx.t0
                if self.tids_before is not None:
                    self.born_attaching = attach_gap.born_since(
                        self.ctx.target.pid, self.tids_before, self.recording_at, self.ctx.t0
                    )
                # what the target used while perf set up is not what perf missed
                self.target_cpu_at_start = target_cpu_seconds(self.ctx.target.pid)
                return self.recording_at
            if child.poll() is not None or self.ctx.stop_event.is_set():
                return None
            left = until - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(0.02, left))

    def target_cpu_used(self) -> float | None:
        """CPU seconds the target used since perf was started (None: not known)."""
        now = target_cpu_seconds(self.ctx.target.pid)
        if now is None or self.target_cpu_at_start is None:
            return None
        return max(0.0, now - self.target_cpu_at_start)

    def running(self) -> bool:
        return self.child is not None and self.child.poll() is None

    def stop(self) -> None:
        """Ask perf to end now (SIGINT: it writes what it has); :meth:`wait` reaps it. Not
        waiting here lets the other collectors stop at the same moment."""
        child = self.child
        if child is not None and child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGINT)

    def wait(self, timeout: float) -> None:
        """Wait for perf to end by itself (the window is over), then stop it."""
        child = self.child
        if child is None:
            return
        rc = child.wait(timeout)
        if rc is None:
            rc = child.stop(grace=15)
        self.rc = rc
        self.wait_recording(0.0)  # perf may have said it after the window opened

    def stderr(self) -> str:
        return self.child.stderr_text() if self.child is not None else ""

    def fix_details(self) -> dict[str, Any]:
        """What perf ran with, for the collector's ``details``: the poll() fix (and whether
        the capture that started this one built it: a worker's), where it read the
        kernel's symbols."""
        out: dict[str, Any] = {"poll_fix": self.poll_fix, "kallsyms": self.kallsyms}
        if self.fix_inherited:
            out["poll_fix_built_by"] = "the service's capture"
        elif self.fix_cached:
            out["poll_fix_built_by"] = "an earlier run (cached)"
        return out

    def capped(self) -> bool:
        return bool(SIZE_LIMIT.search(self.stderr()))

    def ended_s(self) -> float | None:
        """When perf last wrote its recording (it rewrites the header as it ends), in seconds
        since the capture started; None if there is none."""
        try:
            written = os.stat(self.data).st_mtime
        except OSError:
            return None
        return round(time.monotonic() - max(0.0, time.time() - written) - self.ctx.t0, 3)

    def size_bytes(self) -> int:
        return self.ctx.writer.size_of(f"{self.subdir}/.perf.data")

    @property
    def script_stderr_rel(self) -> str:
        return f"{self.subdir}/perf-script.stderr"

    def script(
        self, fields: str, extra: Sequence[str], timeout: float = 180.0
    ) -> Generator[str, None, None]:
        """The recording as ``perf script`` lines (see :func:`perf_script`)."""
        if self.cpus:  # recorded CPU-wide: the target's events only
            extra = [*extra, "--pid", str(self.ctx.target.pid)]
        self.namer_ = symfs.Namer()
        return self._script_lines(fields, extra, timeout)

    def _script_lines(
        self, fields: str, extra: Sequence[str], timeout: float
    ) -> Generator[str, None, None]:
        # (a generator: nothing is prepared for a script that is never read)
        pid = self.ctx.target.pid
        big = symfs.acquire(pid)
        try:
            if big is not None:  # libraries perf would take seconds to load: named here
                assert self.namer_ is not None
                self.namer_.big = big
                extra = [*extra, "--symfs", big.root, "--kallsyms", "/proc/kallsyms"]
            yield from perf_script(
                self.ctx, self.perf, self.data, fields, extra, self.script_stderr_rel, timeout
            )
        finally:
            symfs.release(pid)

    def namer(self) -> FrameNamer | None:
        """What names the frames of the libraries perf was not given (see :meth:`script`)."""
        return self.namer_

    def named_here(self, details: dict[str, Any]) -> None:
        """Say in ``details`` which libraries' frames diagnose named, and how many."""
        if self.namer_ is not None and self.namer_.big is not None:
            details["symbols_named_by_diagnose"] = {
                "libraries": [os.path.basename(p) for p in self.namer_.big.paths],
                "addresses_named": self.namer_.named,
                "addresses_unnamed": self.namer_.unnamed,
            }

    def script_warnings(self) -> tuple[int, str]:
        """(events lost, perf script's last error) once the script has run."""
        try:
            text = self.ctx.writer.read_text(self.script_stderr_rel)
        except OSError:
            return 0, ""
        return script_warnings(text)

    def cleanup(self) -> None:
        self.ctx.writer.unlink(f"{self.subdir}/.perf.data")
        self.ctx.writer.unlink(f"{self.subdir}/.perf.data.old")


class PerfCollectorBase(Collector):
    """A collector that needs one perf feature (``feature``, see the probe) and runs one
    perf process (``child``, or a :class:`PerfRecord` in ``rec``)."""

    feature = ""
    slow_start = True

    def __init__(self) -> None:
        self.caps: PerfCapabilities | None = None
        self.child: Child | None = None
        self.rec: PerfRecord | None = None

    def probe(self, ctx: CaptureContext) -> str | None:
        self.caps = capabilities_for(ctx.t0)
        reason = unavailable_reason(self.caps, self.feature)
        if reason is None:
            pollfix.prepare()  # built while the other collectors start
        return reason

    @property
    def perf(self) -> str:
        assert self.caps is not None and self.caps.perf is not None
        return self.caps.perf

    def wait_recording(self, until: float) -> float | None:
        if self.rec is None:  # a perf without PerfRecord: counted from its start
            return self.child.started if self.child is not None else None
        return self.rec.wait_recording(until)

    def progress(self) -> str:
        running = self.rec.running() if self.rec else (self.child and self.child.poll() is None)
        return f"{self.name} {'recording' if running else 'done'}"

    def stop(self) -> None:
        """SIGINT to perf without waiting; ``finish`` waits (SIGKILL after a grace period)."""
        if self.rec is not None:
            self.rec.stop()
        child = self.child
        if child is not None and child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGINT)

    def conclude(
        self,
        ctx: CaptureContext,
        problems: list[str],
        files: list[str],
        details: dict[str, Any],
        lost: int = 0,
        recorded: int = 0,
        notes: Sequence[str] = (),
    ) -> CollectorRecord:
        """ok, or partial with every reason (dropped events, the target's exit, ...).

        A few dropped events on a busy host (under 1% of what was recorded) are noted, not
        counted as a partial recording; ``notes`` are said without making it partial."""
        notes = list(notes)
        if lost:
            text = f"the kernel dropped {lost} events (ring buffer full)"
            if recorded and lost < 0.01 * (recorded + lost):
                notes.append(f"{text}: under 1% of the {recorded} recorded")
            else:
                problems.append(text)
        if ctx.target_exited.is_set():
            problems.append("the target exited during the capture")
        if self.rec is not None:
            details.update(self.rec.fix_details())
        if self.rec is not None and self.rec.spun is not None:
            problems.append(self.rec.spin_problem())
            details["busy_loop_stopped"] = {"at_s": self.rec.spun[0], "cores": self.rec.spun[1]}
        status = CollectorStatus.PARTIAL if problems else CollectorStatus.OK
        return self.record(status, "; ".join(problems + notes), files, **details)

    def attach_gap(
        self, ctx: CaptureContext, seen: set[int], min_cpu_s: float, what: str, details: Any
    ) -> str:
        """Say which threads perf missed because they were born while it attached (into
        ``details["untraced_threads"]``); the problem to report, or ""."""
        rec = self.rec
        if rec is None:
            return ""
        missed = rec.untraced(seen, min_cpu_s)
        if not missed:
            return ""
        details["untraced_threads"] = [u.to_dict() for u in missed]
        enabled = None if rec.recording_at is None else rec.recording_at - ctx.t0
        return attach_gap.describe(missed, enabled, what)

    def nothing_recorded(
        self,
        ctx: CaptureContext,
        rec: PerfRecord,
        error: str,
        nothing: str,
        files: list[str],
        details: dict[str, Any],
        busy_cpu_s: float = 0.05,
        unseen: str = "",
    ) -> CollectorRecord:
        """The record of a recording without a single event (``nothing`` says what it
        lacks, and why an idle target gives that).

        perf's own success line ("[ perf record: Captured and wrote 0.001 MB ...]") with no
        error from perf script means that perf ran; if the target used (almost) no CPU while
        it did (under ``busy_cpu_s`` seconds, read from /proc), the target did nothing perf
        records: ``ok``, with that as a note, not a failure. A target that used CPU meanwhile
        was missed (perf starts recording late on a busy host): ``failed``, as are a target
        that had exited before perf attached and a perf that failed, with the reason. Where
        the target's CPU time cannot be read, perf must have run for most of the window.
        A perf that said when it began recording (``-D``) did not start late: the CPU it
        missed since (``unseen`` says where such CPU goes) leaves the recording ``partial``."""
        stderr = rec.stderr()
        details.update(rec.fix_details())
        if rec.spun is not None:
            return self.record(CollectorStatus.FAILED, rec.spin_problem(), files, **details)
        if error or not WROTE.search(stderr):
            return self.record(CollectorStatus.FAILED, error or no_recording(rec), files, **details)
        used = rec.target_cpu_used()
        details["target_cpu_s"] = None if used is None else round(used, 3)
        window = ctx.window()
        ran = max(0.0, ctx.end_s() - rec.started_t)
        if rec.never_recorded():
            reason = (
                f"perf had not begun recording when the capture ended, {ctx.end_s():.1f} s "
                f"after it started (perf takes seconds to start on a busy host)"
            )
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        if used is not None and used >= busy_cpu_s and rec.recording_at is not None:
            reason = (
                f"perf recorded nothing although the target used {used:.2f} s of CPU after "
                f"perf began recording{unseen}"
            )
            return self.record(CollectorStatus.PARTIAL, reason, files, **details)
        if used is not None and used >= busy_cpu_s:
            reason = (
                f"perf recorded nothing although the target used {used:.2f} s of CPU while it "
                f"ran: it started recording late (a slow start on a busy host)"
            )
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        if used is None and not covered_most(ran, window):
            late = rec.started_t - ctx.window_start_s()
            reason = (
                f"perf started {late:.1f} s into the {window:.1f} s window (a slow "
                f"start on a busy host) and recorded nothing in the {ran:.1f} s left"
            )
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        if ctx.target_exited.is_set():
            reason = f"the target exited during the capture; {nothing}"
            return self.record(CollectorStatus.PARTIAL, reason, files, **details)
        return self.record(CollectorStatus.OK, nothing, files, **details)


def perf_script(
    ctx: CaptureContext,
    perf: str,
    data: Path,
    fields: str,
    extra: Sequence[str],
    stderr_rel: str,
    timeout: float,
) -> Generator[str, None, None]:
    """Lines of ``perf script`` over ``data``, streamed (memory stays flat). Stopped after
    ``timeout`` seconds: the lines read so far are still used."""
    argv = [perf, "script", "-i", str(data), "-F", fields, "--ns", "--no-inline", *extra]
    snapshot = pollfix.kallsyms()
    if snapshot is not None:  # the kernel's symbols without their costly /proc read
        argv.append(f"--kallsyms={snapshot}")
    label = f"perf script {Path(stderr_rel).parent}"
    child = Child(argv, ctx.writer.path(stderr_rel), stdout_pipe=True, label=label)
    timer = threading.Timer(timeout, child.stop)
    timer.daemon = True
    timer.start()
    stdout = child.proc.stdout
    assert stdout is not None
    try:
        for raw in stdout:
            yield raw.decode("utf-8", "replace")
    finally:
        timer.cancel()
        # the pipe first: a reader that stopped early (an event budget) leaves perf script
        # blocked writing into it, where it waits out SIGINT's grace (5 s measured beside a
        # loaded torch service); with the pipe closed it ends at its next write (SIGPIPE)
        stdout.close()
        child.stop(grace=5)


def demangling(details: dict[str, Any]) -> tuple[str | None, list[str]]:
    """(the ``c++filt`` that demangles the stacks, or None: perf does; the ``perf script``
    option that goes with it), and ``demangled_by`` in the collector's ``details``
    (formats/demangle.py)."""
    tool = demangler()
    details["demangled_by"] = "c++filt" if tool else "perf"
    return tool, ["--no-demangle"] if tool else []


def left_mangled(details: dict[str, Any]) -> str:
    """The note of a recording whose ``c++filt`` run failed after its probe had passed, and
    ``demangled_by`` in ``details`` set to say that nothing demangled its names."""
    details["demangled_by"] = "none"
    return (
        "c++filt failed on this recording's names: its C++ and Rust frames are left mangled "
        "(_ZN..., _R...); `c++filt` on a frame reads one"
    )


def _sleeps(status: str) -> int | None:
    """Voluntary context switches of the thread whose /proc ``status`` file this is."""
    try:
        with open(status, encoding="utf-8", errors="replace") as fh:
            return int(parse_status(fh.read()).get("voluntary_ctxt_switches", ""))
    except (OSError, ValueError):
        return None


def target_cpu_seconds(pid: int) -> float | None:
    """The process's CPU time so far (user + system, all threads), or None if it is gone."""
    try:
        t = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return float(t.user + t.system)


def no_recording(rec: PerfRecord) -> str:
    """Why ``perf record`` left nothing to read, with the fix where there is one."""
    stderr = rec.stderr()
    if NO_PROCESS.search(stderr):
        return "the target exited before perf could attach to it"
    if not stderr.strip() and rec.rc == -signal.SIGINT:
        return (
            "perf was stopped before it had started recording: on a busy host it can take "
            "longer to start than the capture lasted (capture longer)"
        )
    return record_failure(stderr) or f"perf record wrote nothing (exit status {rec.rc})"


def record_failure(stderr: str) -> str:
    """Why ``perf record`` failed, with the fix, from its stderr ("" when it said nothing)."""
    if not stderr.strip():
        return ""
    reason, fix = explain(stderr, "perf record")
    return f"{reason}; fix: {fix}"


def script_warnings(text: str) -> tuple[int, str]:
    """(events perf says were lost, the last error line) from perf script's stderr."""
    lost = sum(int(n) for n in LOST_CHUNKS.findall(text))
    errors = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip() and ("error" in ln.lower() or "failed" in ln.lower())
    ]
    return lost, (errors[-1][:200] if errors else "")
