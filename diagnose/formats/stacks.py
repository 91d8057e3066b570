"""Stacks, intervals and the folded format shared by every sampler."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

Stack = tuple[str, ...]

#: ``thread (TID): NAME``: the tid in decimal or hex (py-spy), the name (and the colon)
#: optional. The one pattern every reader of a thread root frame uses.
_THREAD_FRAME = re.compile(
    r"^thread \((?P<tid>0x[0-9a-fA-F]+|\d+)\)(?::(?: (?P<name>.*))?)?$", re.S
)


@dataclass(frozen=True)
class ThreadFrame:
    """The root frame of a per-thread stack: ``thread (TID): NAME``.

    py-spy writes it with ``--threads``; every stack diagnose roots at a thread (flame
    graphs, folded files) is written with :meth:`format` and read back with :meth:`parse`,
    so the text has one definition."""

    tid: int
    name: str = ""

    def format(self) -> str:
        return f"thread ({self.tid}): {self.name}"

    @classmethod
    def parse(cls, frame: str) -> ThreadFrame | None:
        """The thread of a root frame, or None when ``frame`` is not one."""
        m = _THREAD_FRAME.match(frame)
        if not m:
            return None
        raw = m.group("tid")
        tid = int(raw, 16) if raw.lower().startswith("0x") else int(raw)
        return cls(tid, m.group("name") or "")


@dataclass(frozen=True)
class Interval:
    """Thread ``tid`` was seen in ``stack`` from ``start`` to ``end`` (seconds)."""

    tid: int
    start: float
    end: float
    stack: Stack


#: Every character Python's str.splitlines() breaks a line at, not only "\n" and "\r".
_LINE_BREAKS = str.maketrans(dict.fromkeys("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


def clean_frame(text: str) -> str:
    """Make a frame safe for the folded format: no ';' separators or line breaks."""
    return text.replace(";", ":").translate(_LINE_BREAKS)


class StackTable:
    """Interns stacks to small integer ids (0, 1, 2, ...)."""

    def __init__(self) -> None:
        self.ids: dict[Stack, int] = {}
        self.stacks: list[Stack] = []

    def intern(self, stack: Stack) -> int:
        sid = self.ids.get(stack)
        if sid is None:
            sid = len(self.stacks)
            self.ids[stack] = sid
            self.stacks.append(stack)
        return sid

    def relabel(self, frames: Mapping[str, str]) -> None:
        """Rename frames (old label -> new) in every stack; ids stay as they were."""
        if not frames:
            return
        self.stacks = [tuple(frames.get(f, f) for f in stack) for stack in self.stacks]
        self.ids = {}
        for sid, stack in enumerate(self.stacks):
            self.ids.setdefault(stack, sid)


def format_folded(rows: Iterable[tuple[Stack, float | int]]) -> str:
    """``frame;frame;frame WEIGHT`` lines, heaviest first (the FlameGraph format)."""
    agg: dict[Stack, float] = {}
    for stack, weight in rows:
        if stack and math.isfinite(weight):
            agg[stack] = agg.get(stack, 0) + weight
    lines = []
    for stack, weight in sorted(agg.items(), key=lambda kv: (-kv[1], kv[0])):
        w = round(weight) if math.isfinite(weight) else 0
        if w <= 0:
            continue
        lines.append(";".join(clean_frame(f) for f in stack) + f" {w}")
    return "\n".join(lines) + ("\n" if lines else "")


def parse_folded(text: str) -> Iterator[tuple[Stack, float]]:
    """Parse folded lines; lines that are not ``stack COUNT`` are skipped. Lines end at
    "\n" only: a U+2028 inside a frame name does not split its line."""
    for line in text.split("\n"):
        line = line.rstrip()
        if not line:
            continue
        stack_text, sep, count = line.rpartition(" ")
        if not sep or not stack_text:
            continue
        try:
            weight = float(count)
        except ValueError:
            continue
        if weight < 0 or weight != weight or weight == float("inf"):
            continue
        yield tuple(stack_text.split(";")), weight
