"""What diagnose costs the host, by part: its own threads and each helper it runs.

The /proc sampler reads the total at every slow tick (``tool_cpu_s`` in proc/process.csv:
one read of /proc/self/stat and one per helper) and the parts twice, when the measured
window opens and when it closes: diagnose's threads by name (the /proc sampler, a py-spy
chunk reader, the main thread; to the nanosecond, from schedstat) and its helpers by
label (``py-spy trace``, ``perf record sched``, collect/child.py), except another
diagnose capturing a worker beside this one, which accounts for itself. A helper that exited
keeps the last value read, so no part ever drops; the CPU of diagnose's threads that ended
between the two reads is ``diagnose (ended threads)``, the difference between the
process's total and its live threads'.
"""

from __future__ import annotations

import os
import threading

from diagnose.collect.child import OWN_ACCOUNT, live_helpers
from diagnose.collect.procfs import CLK_TCK, parse_schedstat, parse_stat

OWN = "diagnose"
ENDED = "diagnose (ended threads)"


def cpu_of(path: str) -> float | None:
    """User + system CPU seconds of the /proc ``stat`` file at ``path`` (None: unreadable)."""
    try:
        with open(path, "rb") as fh:
            st = parse_stat(fh.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    return (st.utime + st.stime) / CLK_TCK


def thread_cpu_of(task: str) -> float | None:
    """On-CPU seconds of one thread (``/proc/.../task/TID``) to the nanosecond, from its
    ``schedstat``: ``stat`` counts clock ticks (10 ms), which a sampler using a few ms over
    a window reads as nothing. ``stat`` where ``schedstat`` is missing (None: unreadable)."""
    try:
        with open(f"{task}/schedstat", "rb") as fh:
            return parse_schedstat(fh.read().decode("ascii", "replace"))[0] / 1e9
    except (OSError, ValueError):
        return cpu_of(f"{task}/stat")


def thread_label(name: str) -> str:
    """``diagnose-proc`` -> ``diagnose proc``; ``MainThread`` -> ``diagnose main``."""
    if name == "MainThread":
        return f"{OWN} main"
    return f"{OWN} {name.removeprefix('diagnose-')}"


class ToolCpu:
    """Cumulative CPU seconds of diagnose and its helpers (module docstring)."""

    def __init__(self) -> None:
        self._helpers: dict[int, tuple[str, float]] = {}
        self._start: tuple[float, dict[tuple[str, int], tuple[str, float]]] | None = None

    def total(self) -> float:
        """diagnose's process (every thread, ended ones included) plus every helper's CPU."""
        own = cpu_of("/proc/self/stat") or 0.0
        for pid, label in live_helpers():
            if label == OWN_ACCOUNT:
                continue
            cpu = cpu_of(f"/proc/{pid}/stat")
            if cpu is not None:
                before = self._helpers.get(pid, (label, 0.0))[1]
                self._helpers[pid] = (label, max(before, cpu))
        return own + sum(cpu for _, cpu in self._helpers.values())

    def _snapshot(self) -> tuple[float, dict[tuple[str, int], tuple[str, float]]]:
        """diagnose's process CPU, and each of its threads' and helpers' by (kind, id)."""
        self.total()
        out: dict[tuple[str, int], tuple[str, float]] = {
            ("helper", pid): entry for pid, entry in self._helpers.items()
        }
        names = {t.native_id: t.name for t in threading.enumerate()}
        try:
            tids = [int(x) for x in os.listdir("/proc/self/task")]
        except OSError:
            tids = []
        for tid in tids:
            cpu = thread_cpu_of(f"/proc/self/task/{tid}")
            if cpu is not None:
                out[("thread", tid)] = (thread_label(names.get(tid, "other threads")), cpu)
        return cpu_of("/proc/self/stat") or 0.0, out

    def mark_start(self) -> None:
        """The window opened: parts are counted from here."""
        self._start = self._snapshot()

    @property
    def started(self) -> bool:
        return self._start is not None

    def since_start(self) -> dict[str, float]:
        """CPU seconds by part since :meth:`mark_start` (every part that used a millisecond
        or more), largest first; empty before it."""
        if self._start is None:
            return {}
        (own0, start), (own1, now) = self._start, self._snapshot()
        used: dict[str, float] = {}
        threads = 0.0
        for key, (label, cpu) in now.items():
            delta = max(0.0, cpu - start.get(key, (label, 0.0))[1])
            used[label] = used.get(label, 0.0) + delta
            if key[0] == "thread":
                threads += delta
        used[ENDED] = max(0.0, own1 - own0 - threads)
        ranked = sorted(used.items(), key=lambda kv: (-kv[1], kv[0]))
        return {k: round(v, 3) for k, v in ranked if v >= 0.001}
