"""Parsers for the /proc files the thread-state sampler reads. Pure functions of text.

Every value here is controlled by the kernel except thread names (``comm``), which the
target sets itself: they are returned as read and escaped by the renderers.
See proc(5) for the formats.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Stat:
    comm: str
    state: str
    minflt: int
    majflt: int
    utime: int  # clock ticks
    stime: int
    num_threads: int
    starttime: int
    rss_pages: int
    processor: int  # CPU it last ran on


def parse_stat(text: str) -> Stat:
    """Parse /proc/PID[/task/TID]/stat. The comm may hold spaces and parentheses.

    Raises ValueError when ``text`` is not such a line (as every parser here does)."""
    lpar = text.find("(")
    rpar = text.rfind(")")
    rest = text[rpar + 2 :].split()
    if lpar < 0 or rpar < lpar or len(rest) < 24 - 2:
        raise ValueError(f"not a /proc stat line: {text[:60]!r}")
    comm = text[lpar + 1 : rpar]
    # rest[0] is field 3 (state); field N is rest[N - 3]
    return Stat(
        comm=comm,
        state=rest[0],
        minflt=int(rest[10 - 3]),
        majflt=int(rest[12 - 3]),
        utime=int(rest[14 - 3]),
        stime=int(rest[15 - 3]),
        num_threads=int(rest[20 - 3]),
        starttime=int(rest[22 - 3]),
        rss_pages=int(rest[24 - 3]),
        processor=int(rest[39 - 3]) if len(rest) > 39 - 3 else -1,
    )


def parse_schedstat(text: str) -> tuple[int, int, int]:
    """/proc/.../schedstat: (ns on CPU, ns waiting on a run queue, timeslices run)."""
    parts = text.split()
    if len(parts) < 3:
        raise ValueError(f"not a /proc schedstat line: {text[:60]!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def parse_syscall(text: str) -> tuple[int | None, str]:
    """/proc/.../syscall: (syscall number, first argument in hex), or (None, "") if running.

    ``-1`` means the thread is blocked but not in a system call (a page fault, say).
    """
    text = text.strip()
    if not text or text == "running":
        return None, ""
    parts = text.split()
    nr = int(parts[0])
    arg0 = parts[1] if len(parts) > 1 and nr >= 0 else ""
    return nr, arg0


def parse_status(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_sched_migrations(text: str) -> int | None:
    """se.nr_migrations from /proc/.../sched (needs CONFIG_SCHED_DEBUG)."""
    for line in text.splitlines():
        if line.startswith("se.nr_migrations"):
            try:
                return int(line.split(":", 1)[1].strip().split(".")[0])
            except (IndexError, ValueError):
                return None
    return None


MAX_CPUS = 1 << 16  # a list naming more CPUs than this is not one the kernel wrote


def parse_cpu_list(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]. ValueError for anything else."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        first = int(lo)
        last = int(hi) if sep else first
        if not 0 <= first <= last < MAX_CPUS or len(cpus) + last - first >= MAX_CPUS:
            raise ValueError(f"not a CPU list: {text[:60]!r}")
        cpus.extend(range(first, last + 1))
    return cpus


def parse_proc_stat_cpus(text: str) -> dict[int, tuple[int, int]]:
    """/proc/stat per-CPU lines -> {cpu: (busy jiffies, total jiffies)}."""
    out: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        fields = line.split()
        try:
            cpu = int(fields[0][3:])
            vals = [int(v) for v in fields[1:]]
        except ValueError:
            continue
        if len(vals) < 4:
            continue
        # user nice system idle iowait irq softirq steal guest guest_nice
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
        total = sum(vals[:8])
        out[cpu] = (total - idle, total)
    return out
