"""py-spy's outputs: ``chrometrace`` (timestamped stack changes) and ``raw`` (folded)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from diagnose.formats.stacks import Interval, Stack, ThreadFrame, parse_folded

_SAMPLES = re.compile(r"Samples:\s*(\d+)\s+Errors:\s*(\d+)")


class FormatError(ValueError):
    """The tool's output is not what we expect; the message says what and where."""


def frame_label(name: str, filename: str, line: int) -> str:
    if not filename:
        return name
    return f"{name} ({filename}:{line})" if line else f"{name} ({filename})"


def chrometrace_intervals(
    events: Any, offset: float = 0.0
) -> tuple[list[Interval], dict[int, str]]:
    """Turn py-spy chrometrace events into per-thread stack intervals.

    py-spy emits a ``B`` event when a frame appears in a thread's stack and an ``E`` when it
    leaves, merging consecutive identical samples. The root frame is ``thread (TID): NAME``
    (from ``--threads``), which gives the OS thread id. Times are ``ts`` microseconds since
    py-spy started, shifted by ``offset`` seconds.

    Returns the intervals and a map OS tid -> Python thread name.
    """
    if not isinstance(events, list):
        raise FormatError("chrometrace is not a JSON array of events")
    open_stacks: dict[Any, list[str]] = {}
    last_ts: dict[Any, float] = {}
    os_tid: dict[Any, int] = {}
    names: dict[int, str] = {}
    intervals: list[Interval] = []

    def close(key: Any, until: float) -> None:
        stack = open_stacks.get(key)
        start = last_ts.get(key)
        if stack and start is not None and until > start and key in os_tid:
            intervals.append(Interval(os_tid[key], start, until, tuple(stack[1:])))

    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise FormatError(f"chrometrace event {i} is not an object")
        ph = ev.get("ph")
        if ph not in ("B", "E"):
            continue
        key = ev.get("tid")
        ts_raw = ev.get("ts")
        if not isinstance(ts_raw, (int, float)) or isinstance(ts_raw, bool):
            raise FormatError(f"chrometrace event {i} has no numeric ts")
        ts = offset + float(ts_raw) / 1e6
        name = ev.get("name")
        if not isinstance(name, str):
            raise FormatError(f"chrometrace event {i} has no name")
        stack = open_stacks.setdefault(key, [])
        if ts != last_ts.get(key):
            close(key, ts)
            last_ts[key] = ts
        if ph == "B":
            if not stack:
                thread = ThreadFrame.parse(name)
                if thread is None:
                    raise FormatError(
                        f"chrometrace event {i}: root frame {name[:60]!r} is not 'thread (TID): NAME'"
                        " (was py-spy run with --threads?)"
                    )
                os_tid[key] = thread.tid
                names[thread.tid] = thread.name
                stack.append(name)
            else:
                raw = ev.get("args")
                args: dict[str, Any] = raw if isinstance(raw, dict) else {}
                filename = args.get("filename")
                line = args.get("line")
                filename = filename if isinstance(filename, str) else ""
                line = line if isinstance(line, int) else 0
                stack.append(frame_label(name, filename, line))
        elif stack:
            stack.pop()
    if last_ts:
        end = max(last_ts.values())
        for key, stack in open_stacks.items():
            if stack:  # py-spy was cut off before closing its frames
                close(key, end)
    return intervals, names


def parse_raw(text: str) -> Iterator[tuple[int, str, Stack, float]]:
    """py-spy ``raw`` with ``--threads``: yields (tid, thread name, stack, count)."""
    for stack, count in parse_folded(text):
        thread = ThreadFrame.parse(stack[0]) if stack else None
        if thread is None:
            continue
        yield thread.tid, thread.name, stack[1:], count


def parse_summary(stderr: str) -> tuple[int | None, int | None]:
    """``Samples: N Errors: M`` from py-spy's stderr."""
    found = _SAMPLES.findall(stderr)
    if not found:
        return None, None
    samples, errors = found[-1]
    return int(samples), int(errors)


def explain_failure(stderr: str, pid: int, rc: int | None = None) -> str:
    """One line saying why py-spy failed, with the fix where we know it. ``rc``: its exit
    status (negative: the signal that ended it), which says why when it said nothing."""
    text = stderr.strip()
    low = text.lower()
    if not text and rc is not None and rc < 0:
        return (
            f"py-spy was stopped (signal {-rc}) before it wrote anything: the capture ended "
            "while it was starting"
        )
    if not text and rc is not None:
        return f"py-spy exited with {rc} and said nothing"
    if "failed to find python version" in low or "failed to find a python interpreter" in low:
        return f"PID {pid} does not look like a CPython process to py-spy ({_last_line(text)})"
    if "permission denied" in low or "operation not permitted" in low:
        return (
            f"py-spy was not permitted to read PID {pid}: run as root or the target's user, "
            "with CAP_SYS_PTRACE in containers"
        )
    if "no such process" in low or "no such file or directory" in low:
        return f"PID {pid} exited while py-spy was attaching"
    return f"py-spy failed: {_last_line(text) or 'no message'}"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("   ")]
    for ln in reversed(lines):
        if ln.lower().startswith("error") or "failed" in ln.lower():
            return ln[:300]
    return lines[-1][:300] if lines else ""
