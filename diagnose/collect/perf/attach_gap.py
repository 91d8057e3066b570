"""Threads that a ``perf record -p`` never traced because they were born while it attached.

perf lists the target's threads once, as it starts, and then opens its events on each of
them; a thread cloned after its parent's event is open inherits it, so perf follows it. A
thread born in between (after the listing, before its parent's event was open) is never
traced: in a CI run the two threads of a lock service started 0.67 and 0.79 s into the
capture, perf's events came on at 1.11 s, and the scheduler trace held nothing of them.

So the threads that were not there when perf was spawned and were born before it said its
events were on (``-D``: "Events enabled") are read then, as candidates; those of them that
used CPU after that and left not one event in the recording were missed, and the collector
names them. A thread born later inherited the events; a thread that did not run since has
nothing to miss. Start times come from ``/proc/PID/task/TID/stat`` (clock ticks since
boot, on CLOCK_BOOTTIME), CPU times from the same line.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from diagnose.collect import tasks
from diagnose.collect.procfs import CLK_TCK, parse_stat

#: two reads of one thread's start time agree within this (clock ticks of 10 ms)
SAME_BIRTH_S = 0.005


@dataclass(frozen=True)
class Untraced:
    """A thread of the target perf did not trace: its kernel name (the target sets it),
    when it was born and the CPU it used since, in seconds."""

    tid: int
    name: str
    born_s: float  # since the capture's t0
    cpu_s: float

    def to_dict(self) -> dict[str, object]:
        return {"tid": self.tid, "name": self.name, "born_s": self.born_s, "cpu_s": self.cpu_s}


def task_ids(pid: int) -> set[int]:
    """The process's thread IDs now (empty when it is gone)."""
    return set(tasks.task_ids(pid))


def born_since(pid: int, before: set[int], until: float | None, t0: float) -> list[Untraced]:
    """The threads alive now that were not in ``before`` and were born at monotonic time
    ``until`` or earlier (any time, when None), with the CPU each used since."""
    boot_minus_monotonic = time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic()
    out: list[Untraced] = []
    for tid in sorted(task_ids(pid) - before):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8", errors="replace") as fh:
                stat = parse_stat(fh.read())
        except (OSError, ValueError):
            continue  # it exited meanwhile
        born = stat.starttime / CLK_TCK - boot_minus_monotonic
        # start times are in clock ticks: a tick's grace
        if until is not None and born > until + 1.0 / CLK_TCK:
            continue
        cpu = (stat.utime + stat.stime) / CLK_TCK
        out.append(Untraced(tid, stat.comm[:64], round(born - t0, 3), round(cpu, 3)))
    return out


def missed(
    candidates: Iterable[Untraced], now: Iterable[Untraced], seen: set[int], min_cpu_s: float
) -> list[Untraced]:
    """The ``candidates`` (read when perf's events came on) that used ``min_cpu_s`` of CPU
    or more since (``now``: the same threads read again) and left no event in the
    recording (``seen``: its thread IDs)."""
    later = {u.tid: u for u in now}
    out = []
    for u in candidates:
        again = later.get(u.tid)
        # the same start time (each read converts it to the monotonic clock anew: a
        # rounding apart at most), else the TID was reused
        if again is None or abs(again.born_s - u.born_s) > SAME_BIRTH_S or u.tid in seen:
            continue  # exited (or its TID reused), or traced after all
        cpu = round(again.cpu_s - u.cpu_s, 3)
        if cpu >= min_cpu_s:
            out.append(Untraced(u.tid, again.name, u.born_s, cpu))
    return out


def describe(untraced: list[Untraced], enabled_s: float | None, what: str) -> str:
    """One sentence naming them; ``what`` the recording lacks (e.g. "on-CPU stacks")."""
    shown = ", ".join(f"{u.tid} ({u.name}, {u.cpu_s:.2f} s of CPU)" for u in untraced[:5])
    more = f" and {len(untraced) - 5} more" if len(untraced) > 5 else ""
    when = f" (its events came on at {enabled_s:.2f} s)" if enabled_s is not None else ""
    n = len(untraced)
    return (
        f"perf did not trace {n} thread{'s' if n > 1 else ''} born while it attached{when}: "
        f"{shown}{more}; their {what} are missing (perf lists a process's threads once, as "
        f"it starts): capture again, now that they exist"
    )
