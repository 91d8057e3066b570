"""``perf script`` text output -> events with their stacks.

diagnose runs ``perf script -F tid,cpu,time,event,ip,sym,dso,trace --ns --no-inline
--show-switch-events --show-lost-events`` (fewer fields for plain samples). Its output is
one header line per event::

    11857 [000]  1594.391583036:       sched:sched_switch: prev_comm=python prev_pid=11857 ...
    \tffffffff821facd8 __schedule ([kernel.kallsyms])
    \t           87ebf pthread_cond_signal@@GLIBC_2.3.2 (/usr/lib/x86_64-linux-gnu/libc.so.6)

followed, when the event has a call chain, by one line per frame (leaf first) and a blank
line. Context-switch records read ``PERF_RECORD_SWITCH IN`` / ``OUT`` / ``OUT preempt``.
The thread name (``comm``) is never requested: it is set by the target and could contain
anything, so the header holds only numbers before the event name. Symbol names do come from
the target's binaries; frames are made safe for the folded format and kept as text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from diagnose.formats.demangle import demangle, is_mangled
from diagnose.formats.stacks import StackTable, clean_frame

SWITCH_IN = "switch-in"
SWITCH_OUT = "switch-out"
LOST = "lost"

_HEADER = re.compile(
    r"^\s*(?P<tid>-?\d+)\s+(?:\[(?P<cpu>\d+)\]\s+)?(?P<time>\d+\.\d+):\s+(?P<rest>.*)$"
)
_EVENT = re.compile(r"^(?P<event>[A-Za-z_][\w.-]*(?::[\w.-]+)?):(?:\s+(?P<fields>.*))?$")
_SWITCH = re.compile(r"^PERF_RECORD_SWITCH(?:_CPU_WIDE)?\s+(?P<dir>IN|OUT)(?P<rest>.*)$")
_LOST = re.compile(r"^PERF_RECORD_LOST(?:_SAMPLES)?\b.*?(?P<n>\d+)\s*$")
_FRAME = re.compile(r"^\t\s*(?P<ip>[0-9a-fA-F]+)\s(?P<rest>.*)$")
_MAX_FRAME = 400  # characters of one frame label kept (C++ templates can be huge)
# a mangled name (``--no-demangle``) is cut only past this: cut at 400 it would not demangle
_MAX_MANGLED = 8 * _MAX_FRAME
_MAX_LABELS = 200_000  # distinct frame lines remembered while parsing (bounded memory)


class PerfEvent(NamedTuple):
    """One record of ``perf script``. ``t`` is perf's clock (seconds); ``stack`` is leaf
    first, as perf prints it, each frame ``symbol (library)``. (A named tuple: a scheduler
    trace has millions of them, and a frozen dataclass is several times slower to make.)"""

    tid: int
    cpu: int | None
    t: float
    event: str  # tracepoint or event name, or SWITCH_IN / SWITCH_OUT / LOST
    fields: str = ""  # the tracepoint's formatted fields; "preempt" for a preempted switch-out
    stack: tuple[str, ...] = ()
    lost: int = 0  # LOST records: how many events the kernel dropped


def frame_label(sym: str, dso: str) -> str | None:
    """perf's ``sym`` and ``dso`` -> ``symbol (library)``, or None for an unknown frame."""
    sym = sym.strip()
    dso = dso.strip()
    lib = os.path.basename(dso) if dso and not dso.startswith("[") else dso
    if (not sym or sym == "[unknown]") and (not lib or lib == "[unknown]"):
        return None
    if not sym:
        sym = "[unknown]"
    label = f"{sym} ({lib or '[unknown]'})"
    limit = _MAX_MANGLED if is_mangled(sym) else _MAX_FRAME
    if len(label) > limit:
        label = f"{sym[: limit - len(lib) - 6]}... ({lib})"
    # no parentheses inside the library part, no separators of the folded format
    return clean_frame(label)


#: names the frame perf left unknown at an address (its ``ip``) of a library (``dso`` as
#: perf printed it), or None (collect/perf/symfs.py)
FrameNamer = Callable[[int, str], "str | None"]


def _parse_frame(line: str, namer: FrameNamer | None = None) -> str | None:
    m = _FRAME.match(line)
    if not m:
        return None
    rest = m.group("rest")
    sym, sep, dso = rest.rpartition(" (")
    if not sep or not dso.endswith(")"):
        return frame_label(rest, "")
    dso = dso[:-1]
    if namer is not None and sym.strip() == "[unknown]":
        sym = namer(int(m.group("ip"), 16), dso.strip()) or sym
    return frame_label(sym, dso)


def demangled_frames(frames: Iterable[str], tool: str | None) -> dict[str, str] | None:
    """frame label -> the same frame with its symbol demangled, for the labels of a
    ``--no-demangle`` recording whose symbol ``tool`` (``c++filt``, formats/demangle.py)
    demangles; None when ``tool`` failed (the labels stay mangled). Overloads of one name
    become one frame, as perf prints them; stacks that differed only there keep their own
    ids (their frames are then the same)."""
    if tool is None:
        return {}
    split: dict[str, tuple[str, str]] = {}
    for f in frames:
        if f not in split:
            sym, sep, lib = f.rpartition(" (")
            if sep and lib.endswith(")") and is_mangled(sym):
                split[f] = (sym, lib[:-1])
    names = demangle((sym for sym, _ in split.values()), tool)
    if names is None:
        return None
    out = {}
    for f, (sym, lib) in split.items():
        text = names.get(sym)
        label = frame_label(text, lib) if text else None
        if label is not None and label != f:
            out[f] = label
    return out


def demangle_table(table: StackTable, tool: str | None) -> dict[str, str] | None:
    """Demangle the frames of every stack in ``table`` (see :func:`demangled_frames`);
    return the renames, for other copies of those frames (a folded profile's keys), or
    None when ``tool`` failed (the frames stay mangled)."""
    renames = demangled_frames({f for stack in table.stacks for f in stack}, tool)
    if renames is not None:
        table.relabel(renames)
    return renames


_Header = tuple[int, "int | None", float, str, str, int]  # tid, cpu, t, event, fields, lost


def _numbers(line: str) -> tuple[int, int | None, float, str] | None:
    """(tid, cpu, time, the rest) of a header line: split on blanks, the shape perf writes
    (``TID [CPU] SECONDS.NS: REST``), else the regular expression (odd spacing)."""
    parts = line.split(None, 3)
    try:
        if len(parts) == 4 and parts[1][:1] == "[" and parts[2][-1:] == ":":
            return int(parts[0]), int(parts[1][1:-1]), float(parts[2][:-1]), parts[3]
        if len(parts) >= 3 and parts[1][-1:] == ":" and "." in parts[1]:
            rest = line.split(None, 2)[2]
            return int(parts[0]), None, float(parts[1][:-1]), rest
    except ValueError:
        pass
    m = _HEADER.match(line)
    if not m:
        return None
    cpu = m.group("cpu")
    return (
        int(m.group("tid")),
        None if cpu is None else int(cpu),
        float(m.group("time")),
        m.group("rest"),
    )


def _header(line: str) -> _Header | None:
    parsed = _numbers(line)
    if parsed is None:
        return None
    tid, cpu, t, rest = parsed
    rest = rest.rstrip()
    if rest.startswith("PERF_RECORD_"):
        sw = _SWITCH.match(rest)
        if sw:
            if sw.group("dir") == "IN":
                return tid, cpu, t, SWITCH_IN, "", 0
            return tid, cpu, t, SWITCH_OUT, "preempt" if "preempt" in sw.group("rest") else "", 0
        lost = _LOST.match(rest)
        if lost:
            return tid, cpu, t, LOST, "", int(lost.group("n"))
    ev = _EVENT.match(rest)
    if not ev:
        return None
    return tid, cpu, t, ev.group("event"), ev.group("fields") or "", 0


def parse_script(lines: Iterable[str], namer: FrameNamer | None = None) -> Iterator[PerfEvent]:
    """Events of ``perf script`` output, in its order. Lines that fit no known shape
    (warnings, a line cut off at the end of a killed run) are skipped. ``namer`` names the
    frames perf printed as ``[unknown]``, where it can."""
    current: _Header | None = None
    frames: list[str] = []
    # a frame line (address, symbol, library) recurs in every event with that call chain:
    # parse each distinct one once (a 60 s scheduler trace has millions of frame lines and
    # a few thousand distinct ones)
    labels: dict[str, str | None] = {}

    for raw in lines:
        line = raw.rstrip("\n")
        if line[:1] == "\t":
            if current is not None:
                if line in labels:
                    f = labels[line]
                else:
                    f = _parse_frame(line, namer)
                    if len(labels) < _MAX_LABELS:
                        labels[line] = f
                if f is not None:
                    frames.append(f)
            continue
        if current is not None:
            tid, cpu, t, event, fields, lost = current
            yield PerfEvent(tid, cpu, t, event, fields, tuple(frames), lost)
        frames = []
        # a blank line ends an event's call chain
        current = _header(line) if line.strip() else None
    if current is not None:
        tid, cpu, t, event, fields, lost = current
        yield PerfEvent(tid, cpu, t, event, fields, tuple(frames), lost)


# --- tracepoint fields -------------------------------------------------------------------

# prev_comm is the target's thread name (at most 15 characters, so it cannot hold the whole
# pattern below); next_comm can be anyone's: match from prev_pid on, then check the tid.
_SWITCH_FIELDS = re.compile(
    r"prev_pid=(?P<pid>\d+) prev_prio=-?\d+ prev_state=(?P<state>[A-Za-z+|]+) ==> next_comm="
)
_WAKEUP_FIELDS = re.compile(r"pid=(?P<pid>\d+) prio=-?\d+ (?:success=\d+ )?target_cpu=(?P<cpu>\d+)")
_FUTEX_ENTER = re.compile(
    r"^uaddr: (?P<uaddr>0x[0-9a-fA-F]+), op: (?P<op>0x[0-9a-fA-F]+), val: (?P<val>0x[0-9a-fA-F]+)"
)
_FUTEX_EXIT = re.compile(r"^(?P<ret>0x[0-9a-fA-F]+|-?\d+)")


def switch_state(ev: PerfEvent) -> str | None:
    """``sched:sched_switch`` -> the state the thread left in (R = preempted, S, D, ...)."""
    m = _SWITCH_FIELDS.search(ev.fields)
    if not m or int(m.group("pid")) != ev.tid:
        return None
    return m.group("state")


def wakeup_target(ev: PerfEvent) -> int | None:
    """``sched:sched_wakeup`` -> the tid that was woken (the event's tid is the waker)."""
    found = _WAKEUP_FIELDS.findall(ev.fields)
    if not found:
        return None
    return int(found[-1][0])  # the last match: comm= comes first and is untrusted


def futex_enter(ev: PerfEvent) -> tuple[int, int, int] | None:
    """``syscalls:sys_enter_futex`` -> (uaddr, op, val)."""
    m = _FUTEX_ENTER.match(ev.fields)
    if not m:
        return None
    return int(m.group("uaddr"), 16), int(m.group("op"), 16), int(m.group("val"), 16)


def futex_exit(ev: PerfEvent) -> int | None:
    """``syscalls:sys_exit_futex`` -> the return value (negative errno on failure)."""
    m = _FUTEX_EXIT.match(ev.fields)
    if not m:
        return None
    raw = m.group("ret")
    v = int(raw, 16) if raw.startswith("0x") else int(raw)
    return v - (1 << 64) if v >= 1 << 63 else v
