"""The thread-state sampler: every thread of the target, N times a second, from /proc.

One row per thread per tick in ``proc/threads.csv`` (a tidy time series pandas loads as it
is), one row per tick in ``proc/process.csv``, one row per CPU per tick in
``proc/cpus.csv``, and every 2 s the other processes' CPU time in ``proc/host.csv``
(collect/hostprocs.py). Rows are streamed and flushed every tick, so memory stays flat however
long the capture, and a capture cut short keeps every complete tick.

Cost: files are kept open and re-read with ``pread`` (about 3 us a read here, against 12 us
for open/read/close); ``status`` and ``sched`` (cumulative switch and migration counters)
are read at a fifth of the tick rate. Threads that appear mid-capture are picked up at the
next tick, threads that vanish keep the rows they had.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import threading
import time
from typing import Any

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.base import CaptureContext, Collector
from diagnose.collect.child import live_children
from diagnose.collect.hostprocs import HOST_COLUMNS, HOST_SCAN_EVERY_S, HostScan
from diagnose.collect.procfs import (
    CLK_TCK,
    parse_proc_stat_cpus,
    parse_sched_migrations,
    parse_schedstat,
    parse_stat,
    parse_status,
    parse_syscall,
)
from diagnose.collect.sockwait import WaitedSockets
from diagnose.collect.toolcpu import ToolCpu
from diagnose.errors import OutputError
from diagnose.words import count

THREAD_COLUMNS = [
    "t",  # seconds since the capture started
    "tid",
    "comm",  # kernel thread name (set by the target: untrusted text)
    "state",  # R running or runnable, S sleeping, D uninterruptible (disk), T stopped, ...
    "cpu",  # CPU it last ran on
    "utime",  # seconds of user CPU, cumulative
    "stime",  # seconds of system CPU, cumulative
    "minflt",
    "majflt",
    "oncpu_ns",  # schedstat: time on a CPU, cumulative
    "runq_ns",  # schedstat: time runnable but waiting for a CPU, cumulative
    "slices",  # schedstat: timeslices run, cumulative
    "syscall",  # number of the system call it is blocked in; empty when running; -1 none
    "arg0",  # first argument of that call (for futex: the lock's address)
    "wchan",  # kernel function it sleeps in
    "vcsw",  # voluntary context switches, cumulative (read at a lower rate: empty between)
    "ivcsw",  # involuntary context switches, cumulative
    "migrations",  # moves between CPUs, cumulative (needs CONFIG_SCHED_DEBUG)
    # blocked on a TCP socket (read, or poll/select/epoll over a set holding it): "out" a
    # connection it made (a dependency), "in" one it accepted (its client), "loop" polling
    # both while a dependency awaits a reply; "" neither
    "sock",
]
PROCESS_COLUMNS = [
    "t",
    "threads",
    "rss_bytes",
    "minflt",
    "majflt",
    "utime",
    "stime",
    "load1",
    "sys_running",  # runnable tasks on the whole host (/proc/loadavg)
    "sys_tasks",
    # CPU seconds used by diagnose itself and its helpers (py-spy, perf), cumulative; read at
    # the slow ticks' rate (empty between: reading every helper's stat was a fifth of the
    # sampler's own CPU at 20 Hz)
    "tool_cpu_s",
    # at the slow ticks, from the kernel's socket times (collect/tcpinfo.py): requests
    # outstanding at dependencies (outbound connections awaiting a reply), and clients with
    # traffic (accepted connections that received data in the last second)
    "out_awaiting",
    "clients",
]
CPU_COLUMNS = ["t", "cpu", "busy_jiffies", "total_jiffies"]

_SLOW_EVERY = 5  # status and sched are read every 5th tick
#: the target's sockets and TCP table are read again at most this often (collect/sockwait.py)
SOCKETS_MAX_AGE_S = 1.0
_FAST_FILES = ("stat", "schedstat", "syscall", "wchan")


class _ThreadFiles:
    """Open descriptors of one thread's /proc files, re-read with pread."""

    __slots__ = ("fds", "tid")

    def __init__(self, base: str, tid: int) -> None:
        self.tid = tid
        self.fds: dict[str, int] = {}
        for name in _FAST_FILES:
            try:
                self.fds[name] = os.open(f"{base}/{tid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ESRCH):
                    self.close()
                    raise
                # EACCES on syscall/wchan without ptrace rights: leave it out.
                if exc.errno == errno.EMFILE:
                    self.close()
                    raise

    def read(self, name: str) -> str | None:
        fd = self.fds.get(name)
        if fd is None:
            return None
        data = os.pread(fd, 4096, 0)
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()


def _read_file(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, 1 << 20), hard))


def _switches(base: str, tid: int) -> tuple[str, str, str]:
    """Voluntary and involuntary context switches, and migrations, of one thread (the
    slow tick's files: /proc/.../status and sched)."""
    vcsw = ivcsw = migrations = ""
    status = _read_file(f"{base}/{tid}/status")
    if status:
        fields = parse_status(status)
        vcsw = fields.get("voluntary_ctxt_switches", "")
        ivcsw = fields.get("nonvoluntary_ctxt_switches", "")
    sched = _read_file(f"{base}/{tid}/sched")
    if sched:
        m = parse_sched_migrations(sched)
        migrations = "" if m is None else str(m)
    return vcsw, ivcsw, migrations


class ProcSampler(Collector):
    name = "proc"
    description = (
        "thread states, wait channels, futex addresses, CPU and switch counters from /proc"
    )

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.ticks = 0
        self.rows = 0
        self.lag_ticks = 0
        self.threads_seen: set[int] = set()
        self.max_threads = 0
        self.unreadable: set[str] = set()
        self.error: str = ""
        self.ended_early = False
        self.started_at = 0.0
        self.ended_at = 0.0
        self._tool = ToolCpu()
        self._tool_marked = 0.0  # monotonic time the window's parts were first read
        self.tool_parts: dict[str, float] = {}  # CPU-s by part over the window (toolcpu.py)
        self.tool_parts_span = 0.0
        self._waits: WaitedSockets | None = None

    def probe(self, ctx: CaptureContext) -> str | None:
        if not os.path.isdir(f"/proc/{ctx.target.pid}/task"):
            return "/proc is not available for the target (not Linux, or /proc not mounted)"
        return None

    def start(self, ctx: CaptureContext) -> None:
        _raise_fd_limit()
        self._thread = threading.Thread(
            target=self._run, args=(ctx,), name="diagnose-proc", daemon=True
        )
        self._thread.start()

    def progress(self) -> str:
        return f"proc {count(self.ticks, 'tick')}, {count(len(self.threads_seen), 'thread')}"

    def stop(self) -> None:
        self._stop.set()

    def _run(self, ctx: CaptureContext) -> None:
        try:
            self._loop(ctx)
        except OutputError as exc:
            self.error = str(exc)
            ctx.request_stop("disk_full")
        except OSError as exc:
            self.error = f"{exc.strerror or exc}"
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                ctx.request_stop("disk_full")
        except Exception as exc:  # a bug: keep what was written, report it
            self.error = f"internal error: {type(exc).__name__}: {exc}"

    def _loop(self, ctx: CaptureContext) -> None:
        pid = ctx.target.pid
        base = f"/proc/{pid}/task"
        period = 1.0 / ctx.rates().proc
        w = ctx.writer
        files: dict[int, _ThreadFiles] = {}
        no_fd_tids: set[int] = set()
        tgt = ctx.target
        host = HostScan(
            pid, service=(*tgt.siblings, *([tgt.followed_from] if tgt.followed_from else []))
        )
        self._waits = WaitedSockets(pid, max_age=SOCKETS_MAX_AGE_S)
        next_scan = 0.0
        with (
            w.open_rows("proc/threads.csv", THREAD_COLUMNS) as tw,
            w.open_rows("proc/process.csv", PROCESS_COLUMNS) as pw,
            w.open_rows("proc/cpus.csv", CPU_COLUMNS) as cw,
            w.open_rows("proc/host.csv", HOST_COLUMNS) as hw,
        ):
            self.started_at = ctx.elapsed()
            next_tick = time.monotonic()
            try:
                while not self._stop.is_set() and not ctx.stop_event.is_set():
                    now = time.monotonic()
                    if now >= ctx.deadline:
                        break
                    if now < next_tick:
                        self._stop.wait(next_tick - now)
                        continue
                    missed = int((now - next_tick) / period)
                    if missed:
                        self.lag_ticks += missed
                        next_tick += missed * period
                    next_tick += period
                    t = round(now - ctx.t0, 4)
                    alive = self._tick(ctx, t, base, files, no_fd_tids, tw, pw, cw)
                    if ctx.opened_at is not None and not self._tool.started:
                        self._tool.mark_start()
                        self._tool_marked = time.monotonic()
                    if now >= next_scan:
                        self._scan(host, t, hw)
                        next_scan = now + HOST_SCAN_EVERY_S
                    for rows in (tw, pw, cw):  # whole ticks only, even on a full disk
                        rows.commit()
                    if not alive:
                        self.ended_early = True
                        ctx.target_exited.set()
                        break
            finally:
                self.ended_at = ctx.elapsed()
                if self._tool.started:
                    self.tool_parts = self._tool.since_start()
                    self.tool_parts_span = time.monotonic() - self._tool_marked
                for tf in files.values():
                    tf.close()
                if host.scans:  # the span's end: the last tick's time
                    with contextlib.suppress(OutputError, OSError):
                        self._scan(host, round(time.monotonic() - ctx.t0, 4), hw)

    def _tick(
        self,
        ctx: CaptureContext,
        t: float,
        base: str,
        files: dict[int, _ThreadFiles],
        no_fd_tids: set[int],
        tw: Any,
        pw: Any,
        cw: Any,
    ) -> bool:
        pid = ctx.target.pid
        try:
            tids = [int(x) for x in os.listdir(base)]
        except OSError:
            return False
        if not tids:
            return False
        slow = self.ticks % _SLOW_EVERY == 0
        current = set(tids)
        for gone in [tid for tid in files if tid not in current]:
            files.pop(gone).close()
        self.max_threads = max(self.max_threads, len(tids))
        for tid in tids:
            self.threads_seen.add(tid)
            row = self._thread_row(base, tid, t, slow, files, no_fd_tids)
            if row is not None:
                tw.writerow(row)
                self.rows += 1
        # process-wide row
        pstat_text = _read_file(f"/proc/{pid}/stat")
        if pstat_text is None:
            return False
        ps = parse_stat(pstat_text)
        if ps.state in ("Z", "X"):
            return False
        load = (_read_file("/proc/loadavg") or "").split()
        running, _, tasks = (load[3] if len(load) > 3 else "/").partition("/")
        flows = self._waits.flows() if slow and self._waits is not None else None
        pw.writerow(
            [
                t,
                ps.num_threads,
                ps.rss_pages * os.sysconf("SC_PAGE_SIZE"),
                ps.minflt,
                ps.majflt,
                round(ps.utime / CLK_TCK, 3),
                round(ps.stime / CLK_TCK, 3),
                load[0] if load else "",
                running,
                tasks,
                round(self._tool.total(), 3) if slow else "",
                *(flows if flows is not None else ("", "")),
            ]
        )
        stat_all = _read_file("/proc/stat")
        if stat_all:
            for cpu, (busy, total) in sorted(parse_proc_stat_cpus(stat_all).items()):
                cw.writerow([t, cpu, busy, total])
        self.ticks += 1
        return True

    def _scan(self, host: HostScan, t: float, hw: Any) -> None:
        for row in host.scan(t, [os.getpid(), *live_children()]):
            hw.writerow(row)
        hw.commit()

    def _thread_row(
        self,
        base: str,
        tid: int,
        t: float,
        slow: bool,
        files: dict[int, _ThreadFiles],
        no_fd_tids: set[int],
    ) -> list[object] | None:
        tf = files.get(tid)
        if tf is None and tid not in no_fd_tids:
            try:
                tf = _ThreadFiles(base, tid)
                files[tid] = tf
                for name in _FAST_FILES:
                    if name not in tf.fds:
                        self.unreadable.add(name)
            except OSError as exc:
                if exc.errno == errno.EMFILE:
                    no_fd_tids.add(tid)  # fall back to open/read/close for this one
                else:
                    return None
        try:
            if tf is not None:
                stat_text = tf.read("stat")
                sched_text = tf.read("schedstat")
            else:
                stat_text = _read_file(f"{base}/{tid}/stat")
                sched_text = _read_file(f"{base}/{tid}/schedstat")
            if not stat_text:
                return None
            st = parse_stat(stat_text)
            oncpu = runq = slices = ""
            if sched_text:
                a, b, c = parse_schedstat(sched_text)
                oncpu, runq, slices = str(a), str(b), str(c)
            blocked: tuple[object, str, str, str] = ("", "", "", "")
            if st.state != "R":
                blocked = self._blocked_in(base, tid, tf)
            syscall, arg0, wchan, sock = blocked
        except OSError as exc:
            if exc.errno in (errno.ESRCH, errno.ENOENT):
                tf = files.pop(tid, None)
                if tf is not None:
                    tf.close()
                return None
            raise
        except ValueError:  # a file we cannot parse (procfs.py says what): no row this tick
            return None
        vcsw, ivcsw, migrations = _switches(base, tid) if slow else ("", "", "")
        return [
            t,
            tid,
            st.comm,
            st.state,
            st.processor,
            round(st.utime / CLK_TCK, 3),
            round(st.stime / CLK_TCK, 3),
            st.minflt,
            st.majflt,
            oncpu,
            runq,
            slices,
            syscall,
            arg0,
            wchan,
            vcsw,
            ivcsw,
            migrations,
            sock,
        ]

    def _blocked_in(
        self, base: str, tid: int, tf: _ThreadFiles | None
    ) -> tuple[object, str, str, str]:
        """A blocked thread's (system call, its first argument, wait channel, socket
        direction); OSError and ValueError as its /proc files give them."""
        syscall: object = ""
        arg0 = wchan = sock = ""
        sc_text = tf.read("syscall") if tf is not None else None
        if sc_text is None and tf is None:
            sc_text = _read_file(f"{base}/{tid}/syscall")
        if sc_text:
            nr, arg0 = parse_syscall(sc_text)
            syscall = "" if nr is None else nr
            if self._waits is not None:
                sock = self._waits.of_thread(tid, sc_text.strip())
        wc = tf.read("wchan") if tf is not None else _read_file(f"{base}/{tid}/wchan")
        if wc and wc != "0":
            wchan = wc.strip()
        return syscall, arg0, wchan, sock

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        files = ["proc/threads.csv", "proc/process.csv", "proc/cpus.csv", "proc/host.csv"]
        files = [f for f in files if ctx.writer.is_file(f)]
        details: dict[str, object] = {
            "rate_hz": ctx.rates().proc,
            "ticks": self.ticks,
            "rows": self.rows,
            "threads_seen": len(self.threads_seen),
            "max_threads": self.max_threads,
            "late_ticks": self.lag_ticks,
            "window": [round(self.started_at, 3), round(self.ended_at, 3)],
        }
        if self._waits is not None:
            why = self._waits.activity_unavailable
            details["socket_times"] = f"not read: {why}" if why else "read"
        if self.tool_parts:
            # diagnose's own CPU while the window was open, by thread and helper (toolcpu.py)
            details["tool_cpu_parts_s"] = self.tool_parts
            details["tool_cpu_parts_span_s"] = round(self.tool_parts_span, 3)
        if self.unreadable:
            details["unreadable"] = sorted(self.unreadable)
        if self.ticks == 0:
            reason = self.error or (
                "the target exited before the first tick"
                if ctx.target_exited.is_set()
                else f"the capture ended {ctx.window():.1f} s into its window, before the first tick"
            )
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        if self.error:
            return self.record(
                CollectorStatus.PARTIAL, f"stopped early: {self.error}", files, **details
            )
        if self.ended_early:
            return self.record(
                CollectorStatus.PARTIAL,
                f"the target exited {self.ended_at:.1f} s into the capture",
                files,
                **details,
            )
        reason = ""
        if self.unreadable:
            reason = (
                f"could not read {', '.join(sorted(self.unreadable))} of the target's threads "
                "(needs ptrace permission): lock and wait reasons are not recorded"
            )
            return self.record(CollectorStatus.PARTIAL, reason, files, **details)
        return self.record(CollectorStatus.OK, reason, files, **details)
