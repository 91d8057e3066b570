"""``perf script`` output of samples with user registers -> :class:`RegSample` records.

diagnose runs ``perf record -e cpu-clock --user-regs=ax,bx,...,r15`` and reads it back with
``perf script -F tid,time,ip,sym,symoff,dso,uregs --ns --show-lost-events``. One line per
sample (no call chain)::

    11988   863.033083916:      55fcf17a024d w+0x1d (/tmp/fsx/k) ABI:2    AX:0x55fcf17a3088    BX:...

``ABI:2`` is x86-64 (``ABI:0``: no registers were recorded, e.g. a kernel thread); the
registers follow as ``NAME:0xVALUE``. For a sample taken in the kernel, ``ip`` is the
kernel's and the user registers are those at the system call or interrupt: they say
nothing about the kernel's instruction, and the analysis leaves them out.

The symbol and library come from the target's binaries: they are kept as text and escaped
where shown. The thread name (``comm``) is never requested.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

#: The registers diagnose records (perf's names, lower case), in perf's order.
USER_REGS = (
    "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
)  # fmt: skip
USER_REGS_OPTION = "--user-regs=" + ",".join(USER_REGS)
#: those an address can be computed from (the IP is the sample's own)
ADDRESS_REGS = tuple(r for r in USER_REGS if r != "ip")
#: Addresses at or above this are the kernel's (x86-64 canonical upper half).
KERNEL_START = 0xFFFF800000000000

_LINE = re.compile(
    r"^\s*(?P<tid>-?\d+)\s+(?P<time>\d+\.\d+):\s+(?P<ip>[0-9a-fA-F]+)\s+(?P<loc>.*?)\s*"
    r"ABI:(?P<abi>\d+)(?P<regs>(?:\s+[A-Z0-9]+:0x[0-9a-fA-F]+)*)\s*$"
)
_REG = re.compile(r"([A-Z0-9]+):0x([0-9a-fA-F]+)")
_LOST = re.compile(r"PERF_RECORD_LOST(?:_SAMPLES)?\b.*?(?P<n>\d+)\s*$")
_SYMOFF = re.compile(r"^(?P<sym>.*)\+0x(?P<off>[0-9a-fA-F]+)$")
_MAX_TEXT = 400  # characters of a symbol or library name kept


@dataclass(frozen=True)
class RegSample:
    """One cpu-clock sample. ``regs`` maps perf's register names (lower case) to values;
    empty when perf recorded none. ``sym`` is "" when perf did not know the symbol, and
    ``symoff`` is then None (without a symbol start, the previous instruction is found by
    resynchronising the decoder, see :mod:`diagnose.formats.x86`)."""

    tid: int
    t: float
    ip: int
    sym: str = ""
    symoff: int | None = None
    dso: str = ""
    regs: Mapping[str, int] = field(default_factory=dict)

    @property
    def kernel(self) -> bool:
        return self.ip >= KERNEL_START


@dataclass(frozen=True)
class Lost:
    """Samples the kernel dropped (ring buffer full)."""

    n: int


def _matching_open(text: str) -> int | None:
    """Index of the "(" that the final ")" closes (a library name may hold parentheses:
    ``/x.so (deleted)``), or None."""
    if not text.endswith(")"):
        return None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return None


def _location(loc: str) -> tuple[str, int | None, str]:
    """``sym+0x1d (/path/lib.so)`` -> (sym, 0x1d, /path/lib.so); unknown parts empty."""
    loc = loc.strip()
    sym, dso = loc, ""
    open_at = _matching_open(loc)
    if open_at is not None:
        sym, dso = loc[:open_at].strip(), loc[open_at + 1 : -1]
    symoff: int | None = None
    m = _SYMOFF.match(sym)
    if m:
        sym, symoff = m.group("sym"), int(m.group("off"), 16)
    if sym == "[unknown]":
        sym, symoff = "", None
    if dso == "[unknown]":
        dso = ""
    return sym[:_MAX_TEXT], symoff, dso[:_MAX_TEXT]


def parse_sample(line: str) -> RegSample | Lost | None:
    """One line of the output, or None for a line of no known shape."""
    m = _LINE.match(line.rstrip("\n"))
    if m is None:
        lost = _LOST.search(line)
        return Lost(int(lost.group("n"))) if lost else None
    sym, symoff, dso = _location(m.group("loc"))
    regs = {name.lower(): int(val, 16) for name, val in _REG.findall(m.group("regs"))}
    return RegSample(
        tid=int(m.group("tid")),
        t=float(m.group("time")),
        ip=int(m.group("ip"), 16),
        sym=sym,
        symoff=symoff,
        dso=dso,
        regs=regs,
    )


def parse_regs_script(lines: Iterable[str]) -> Iterator[RegSample | Lost]:
    """Samples and lost-sample records, in perf's order; other lines (warnings, a line cut
    off at the end of a killed run) are skipped."""
    for line in lines:
        rec = parse_sample(line)
        if rec is not None:
            yield rec
