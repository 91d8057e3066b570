"""A process's threads as /proc lists them, and their on-CPU times.

The readers of this package that need "which threads does PID have now" or "how long has
each of them run" go through here (the thread-state sampler keeps its own open files for
speed: collect/proc_sampler.py). A thread can exit between the listing and the read of its
files: it is left out, never an error. A process that is gone has no threads.
"""

from __future__ import annotations

import contextlib
import os

from diagnose.collect.procfs import parse_schedstat


def task_ids(pid: int) -> list[int]:
    """The thread IDs of ``pid`` now, ascending (empty when it is gone)."""
    try:
        names = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    return sorted(int(t) for t in names if t.isdigit())


def read_proc(path: str) -> str:
    """The text of a /proc file, or "" where it cannot be read (its process exited)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def read_task(pid: int, tid: int, name: str) -> str:
    """The text of ``/proc/PID/task/TID/NAME``, or "" where it cannot be read (it exited)."""
    return read_proc(f"/proc/{pid}/task/{tid}/{name}")


def schedstats(pid: int) -> dict[int, tuple[int, int, int]]:
    """Each thread's cumulative (nanoseconds on a CPU, nanoseconds runnable but waiting for
    one, timeslices) from its ``schedstat``. Empty where the kernel keeps none."""
    out: dict[int, tuple[int, int, int]] = {}
    for tid in task_ids(pid):
        text = read_task(pid, tid, "schedstat")
        if text:
            with contextlib.suppress(ValueError):
                out[tid] = parse_schedstat(text)
    return out
