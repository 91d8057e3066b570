"""Scheduler and futex events of ``perf record -p PID`` -> per-event rows.

Input: the events of a recording with ``--switch-events`` (exact switch-in/out of each of
the target's threads), ``sched:sched_switch`` with call chains (the state a thread left in
and its stack when it blocked), ``sched:sched_wakeup`` and, where available,
``syscalls:sys_enter_futex`` / ``sys_exit_futex``. Output, pure data:

- :class:`OffCpu`: one row per time a thread left a CPU: when, how long until it ran again,
  the state it left in (``R`` = preempted), its stack, the CPU it came back on, and the
  run-queue delay where it is known: the whole off-CPU time of a preempted thread, or the
  time from a wakeup to running again when the waker was a thread of the target. A wakeup
  from outside the target (a timer interrupt, another process) is not in a per-process
  recording, so that delay stays unknown rather than guessed.
- :class:`FutexWait`: one row per futex wait (FUTEX_WAIT, WAIT_BITSET, LOCK_PI, ...): the
  address, how long, whether the thread blocked, the stack it blocked with, and the waker:
  the thread of the target that called a FUTEX_WAKE on the same address last before the
  wait ended (else the one whose sched_wakeup woke it): the lock's releaser.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from diagnose.formats.perf_script import (
    LOST,
    SWITCH_IN,
    SWITCH_OUT,
    PerfEvent,
    futex_enter,
    futex_exit,
    switch_state,
    wakeup_target,
)

# futex(2) commands (op & FUTEX_CMD_MASK)
FUTEX_CMD_MASK = 0x7F
WAIT_CMDS = {0: "WAIT", 6: "LOCK_PI", 9: "WAIT_BITSET", 11: "WAIT_REQUEUE_PI", 13: "LOCK_PI2"}
WAKE_CMDS = {1: "WAKE", 3: "REQUEUE", 4: "CMP_REQUEUE", 5: "WAKE_OP", 7: "UNLOCK_PI",
             10: "WAKE_BITSET", 12: "CMP_REQUEUE_PI"}  # fmt: skip


def futex_cmd(op: int) -> str:
    cmd = op & FUTEX_CMD_MASK
    return WAIT_CMDS.get(cmd) or WAKE_CMDS.get(cmd) or f"op{cmd}"


@dataclass
class OffCpu:
    t: float  # switch-out time (perf clock)
    tid: int
    cpu: int | None
    state: str  # R (preempted), S (sleeping), D (disk), ... or "?" when the tracepoint was lost
    stack: tuple[str, ...]  # leaf first
    dur: float | None = None  # None: not back on a CPU before the recording ended
    cpu_in: int | None = None
    runq: float | None = None  # seconds waiting for a core, where known
    waker: int | None = None


@dataclass
class FutexWait:
    t: float  # sys_enter_futex
    tid: int
    uaddr: int
    op: int
    val: int
    dur: float | None = None  # None: still waiting when the recording ended
    ret: int | None = None
    blocked: bool = False  # the thread left the CPU inside the call
    stack: tuple[str, ...] = ()  # leaf first: the stack it blocked with
    waker: int | None = None  # the thread that released it (FUTEX_WAKE on uaddr / wakeup)
    wake_t: float | None = None


@dataclass
class SchedSummary:
    events: int = 0
    lost: int = 0  # events the kernel dropped (ring buffer full)
    first_t: float | None = None
    last_t: float | None = None
    threads: set[int] = field(default_factory=set)
    switch_ins: int = 0
    wakeups_seen: int = 0  # switch-ins after a sleep whose waker was recorded
    sleeps_resumed: int = 0  # switch-ins after a sleep (state not R)
    cut: bool = False  # the conversion stopped at its event budget
    mangled: bool = False  # c++filt failed: the stacks' C++/Rust names are left mangled


class _Thread:
    __slots__ = ("futex", "pending_out", "switch_state", "woken")

    def __init__(self) -> None:
        self.pending_out: OffCpu | None = None
        self.switch_state: tuple[float, str, tuple[str, ...]] | None = None
        self.futex: FutexWait | None = None
        self.woken: tuple[float, int] | None = None  # (time, waker tid)


def _switched_out(t: _Thread, ev: PerfEvent) -> None:
    """The thread left its CPU: open its off-CPU row, in the state sched_switch gave."""
    st = t.switch_state
    if st is not None and ev.t - st[0] < 0.01:
        state, stack = st[1], st[2]
    else:
        state, stack = "?", ()
    if ev.fields == "preempt":
        state = "R"  # the kernel's own flag: it was still runnable
    t.switch_state = None
    t.pending_out = OffCpu(ev.t, ev.tid, ev.cpu, state, stack)
    t.woken = None


def _switched_in(t: _Thread, ev: PerfEvent, s: SchedSummary) -> OffCpu | None:
    """The thread runs again: its off-CPU row, closed (with its run-queue delay), if open."""
    out = t.pending_out
    if out is not None:
        out.dur = ev.t - out.t
        out.cpu_in = ev.cpu
        if out.state.startswith("R"):
            out.runq = out.dur
        else:
            s.sleeps_resumed += 1
            if t.woken is not None and t.woken[0] >= out.t:
                out.runq = max(0.0, ev.t - t.woken[0])
                out.waker = t.woken[1]
                s.wakeups_seen += 1
        t.pending_out = None
    t.woken = None
    return out


def _futex_exited(
    t: _Thread, ev: PerfEvent, last_wake: dict[int, tuple[float, int]]
) -> FutexWait | None:
    """A futex call returned: its wait row, closed (with the waker of its address), if open."""
    f = t.futex
    t.futex = None
    if f is None:
        return None
    f.ret = futex_exit(ev)
    f.dur = ev.t - f.t
    lw = last_wake.get(f.uaddr)
    if lw is not None and f.t <= lw[0] <= ev.t and lw[1] != f.tid:
        f.waker, f.wake_t = lw[1], lw[0]  # the releaser of this very address
    return f


def convert(
    events: Iterable[PerfEvent], summary: SchedSummary | None = None
) -> Iterator[OffCpu | FutexWait]:
    """Pair switch-outs with switch-ins and futex entries with exits, in time order.

    Rows are yielded when complete; rows still open at the end (a thread that never ran
    again, a wait that never returned) are yielded last with ``dur`` None. Where the kernel
    dropped events (a LOST record), every open row is abandoned rather than paired across
    the gap.
    """
    s = summary if summary is not None else SchedSummary()
    threads: dict[int, _Thread] = {}
    last_wake: dict[int, tuple[float, int]] = {}  # uaddr -> (time, waker tid) of last WAKE

    def th(tid: int) -> _Thread:
        t = threads.get(tid)
        if t is None:
            t = threads[tid] = _Thread()
        return t

    for ev in events:
        s.events += 1
        if ev.event == LOST:
            # events are missing from here on: pairs spanning the gap would be wrong
            s.lost += ev.lost
            for t in threads.values():
                t.pending_out, t.futex, t.woken, t.switch_state = None, None, None, None
            last_wake.clear()
            continue
        if s.first_t is None:
            s.first_t = ev.t
        s.last_t = ev.t
        s.threads.add(ev.tid)
        name = ev.event
        if name == "sched:sched_switch":
            state = switch_state(ev)
            if state is not None:
                th(ev.tid).switch_state = (ev.t, state, ev.stack)
                f = th(ev.tid).futex
                if f is not None and not f.blocked:
                    f.blocked = True
                    f.stack = ev.stack
        elif name == SWITCH_OUT:
            _switched_out(th(ev.tid), ev)
        elif name == SWITCH_IN:
            s.switch_ins += 1
            out = _switched_in(th(ev.tid), ev, s)
            if out is not None:
                yield out
        elif name == "sched:sched_wakeup":
            wakee = wakeup_target(ev)
            if wakee is not None and wakee != ev.tid:
                th(wakee).woken = (ev.t, ev.tid)
                f = th(wakee).futex
                if f is not None and f.waker is None:
                    f.waker, f.wake_t = ev.tid, ev.t
        elif name == "syscalls:sys_enter_futex":
            parsed = futex_enter(ev)
            if parsed is None:
                continue
            uaddr, op, val = parsed
            cmd = op & FUTEX_CMD_MASK
            if cmd in WAIT_CMDS:
                th(ev.tid).futex = FutexWait(ev.t, ev.tid, uaddr, op, val)
            elif cmd in WAKE_CMDS:
                last_wake[uaddr] = (ev.t, ev.tid)
                th(ev.tid).futex = None
        elif name == "syscalls:sys_exit_futex":
            f = _futex_exited(th(ev.tid), ev, last_wake)
            if f is not None:
                yield f
    for t in threads.values():
        if t.pending_out is not None:
            yield t.pending_out
        if t.futex is not None:
            yield t.futex
