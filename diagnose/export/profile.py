"""The one flat profile every encoder reads: samples (a stack, values, string labels) and
what their values measure. Built from an analysis by :mod:`diagnose.export.views`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from diagnose.formats.stacks import Stack


@dataclass(frozen=True)
class ValueType:
    """What one of a sample's values counts, as pprof names it: ("cpu", "nanoseconds")."""

    type: str
    unit: str


@dataclass(frozen=True)
class FlatSample:
    """One stack of one thread (root first, code frames only) and its values, in the order
    of the profile's ``sample_types``."""

    tid: int
    stack: Stack
    values: tuple[int, ...]
    #: (key, value) string labels: thread_name, thread_role, stage, wait, ...
    labels: tuple[tuple[str, str], ...] = ()


@dataclass
class FlatProfile:
    view: str
    sample_types: tuple[ValueType, ...]
    #: the type a viewer shows first
    default_type: str
    samples: list[FlatSample] = field(default_factory=list)
    period_type: ValueType | None = None
    period: int = 0
    time_nanos: int = 0
    duration_nanos: int = 0
    comments: tuple[str, ...] = ()
    #: label keys that split a view into parts: formats without labels (speedscope) show
    #: them as a frame above the stack
    split_labels: tuple[str, ...] = ()
    #: the target's executable (its file name, as native frames name it)
    main_binary: str = ""

    def total(self, type_name: str) -> int:
        i = [t.type for t in self.sample_types].index(type_name)
        return sum(s.values[i] for s in self.samples)


@dataclass(frozen=True)
class Frame:
    """What a frame's text says: a Python frame ``name (file:line)`` has a source file and
    line; a native one ``symbol (library)`` a library, which pprof calls a mapping."""

    name: str
    file: str = ""
    line: int = 0
    library: str = ""


_FRAME = re.compile(r"^(?P<name>.*?) \((?P<where>[^()]*)\)$", re.S)


@lru_cache(maxsize=1 << 16)
def parse_frame(text: str) -> Frame:
    m = _FRAME.match(text)
    if not m:
        return Frame(text)
    name, where = m.group("name"), m.group("where")
    head, sep, tail = where.rpartition(":")
    if sep and tail.isdigit():
        return Frame(name, head, int(tail))
    if where.endswith(".py"):
        return Frame(name, where)
    return Frame(name, library=where)
