"""x86-64 machine code -> the memory operands an instruction reads and writes (capstone).

Used twice: by the ``false_sharing`` collector, to find the instruction before each sampled
IP and which registers its address operands need (only those are kept in the bundle), and
by the analysis, to compute the addresses written from the sampled registers.

Why two instructions. A cpu-clock sample interrupts the thread between two instructions:
the sampled IP is the next one to run, so a store or locked read-modify-write that stalled
on its cache line usually shows as the instruction *after* it ("skid"). The instruction at
the IP has not run: the sampled registers are its inputs. The previous one has run: its
address is still right unless it overwrote its own base or index register
(``mov rax, [rdi + rax*8]``), in which case no address is claimed.

x86 instructions have variable length, so the previous instruction is found by decoding
forward: from the symbol's start when perf knows the symbol (exact), else by decoding from
several points before the IP and keeping the boundary most of them agree on (x86 decoding
resynchronises within a few instructions), marked ``sync``.

capstone's operand access flags are incomplete for a few instructions (``lock cmpxchg``'s
memory operand is marked read-only, its implicit RAX write is missing; ``lea``, ``nop`` and
``prefetch`` are marked as reads): the tables below correct them.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Register names, as capstone spells any width of them -> perf's name of the 64-bit one.
_CANON: dict[str, str] = {}
for _r in ("a", "b", "c", "d"):
    for _n in (f"r{_r}x", f"e{_r}x", f"{_r}x", f"{_r}l", f"{_r}h"):
        _CANON[_n] = f"{_r}x"
for _r in ("si", "di", "bp", "sp"):
    for _n in (f"r{_r}", f"e{_r}", _r, f"{_r}l"):
        _CANON[_n] = _r
for _i in range(8, 16):
    for _n in (f"r{_i}", f"r{_i}d", f"r{_i}w", f"r{_i}b"):
        _CANON[_n] = f"r{_i}"
_CANON.update({"rip": "ip", "eip": "ip"})
_WIDE = {f"r{r}x" for r in "abcd"} | {f"r{r}" for r in ("si", "di", "bp", "sp")}
_WIDE |= {f"r{i}" for i in range(8, 16)} | {"rip"}

#: Mnemonics whose memory operand is an address, not an access.
NO_ACCESS = ("lea", "nop", "prefetch", "clflush", "clflushopt", "clwb", "clzero", "bnd")
#: Read-modify-write whatever capstone says (with or without a lock prefix).
RMW = ("xchg", "cmpxchg", "cmpxchg8b", "cmpxchg16b", "xadd")
#: Registers these write that capstone may leave out.
IMPLICIT_WRITES = {
    "cmpxchg": ("ax",),
    "cmpxchg8b": ("ax", "dx"),
    "cmpxchg16b": ("ax", "dx"),
    "rdtsc": ("ax", "dx"),
    "cpuid": ("ax", "bx", "cx", "dx"),
    "syscall": ("ax", "cx", "r11"),
}
MAX_INSN = 15  # bytes: the longest x86 instruction
SYNC_BACK = 64  # bytes decoded before the IP when the symbol start is unknown


class DecoderUnavailable(RuntimeError):
    """capstone is not installed."""


@dataclass(frozen=True)
class MemOperand:
    """One memory operand. Registers are perf's names (``ax``, ``r8``, ``ip`` for
    RIP-relative); None when absent. ``computable`` is False for what the sampled
    registers cannot give: a segment base (fs/gs: thread-local storage), a vector index
    (gathers, scatters), a register perf does not record."""

    base: str | None
    index: str | None
    scale: int
    disp: int
    size: int
    read: bool
    write: bool
    computable: bool = True
    addr32: bool = False  # 32-bit address size: the address is truncated to 32 bits


@dataclass(frozen=True)
class Insn:
    address: int
    size: int
    text: str  # "lock add qword ptr [rax], 1"
    mem: tuple[MemOperand, ...]
    writes: frozenset[str]  # registers (perf's names) the instruction changes

    @property
    def end(self) -> int:
        return self.address + self.size

    def address_regs(self) -> set[str]:
        """Registers its address operands need (besides RIP, which the IP gives)."""
        out = set()
        for op in self.mem:
            if op.computable:
                out |= {r for r in (op.base, op.index) if r and r != "ip"}
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"address": self.address, "size": self.size, "text": self.text}


@functools.lru_cache(maxsize=1)
def _cs() -> Any:
    try:
        import capstone
    except ImportError as exc:
        raise DecoderUnavailable(
            "capstone is not installed: pip install capstone (diagnose depends on it)"
        ) from exc
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    md.skipdata = False
    return md


def available() -> str | None:
    """None when the decoder can run, else why not."""
    try:
        _cs()
    except DecoderUnavailable as exc:
        return str(exc)
    return None


def _canon(name: str | None) -> str | None:
    if not name:
        return None
    return _CANON.get(name)


def decode_one(code: bytes, address: int) -> Insn | None:
    """The instruction at the start of ``code`` (loaded at ``address``), or None."""
    from capstone import x86

    md = _cs()
    insn = next(md.disasm(code[:MAX_INSN], address, 1), None)
    if insn is None:
        return None
    mnem = insn.mnemonic
    words = mnem.split()
    base_mnem = words[-1]
    locked = "lock" in words or insn.prefix[0] == x86.X86_PREFIX_LOCK
    no_access = any(base_mnem.startswith(p) for p in NO_ACCESS)
    rmw = locked or base_mnem in RMW
    mem: list[MemOperand] = []
    writes: set[str] = set()
    try:
        _, written = insn.regs_access()
    except Exception:  # capstone raises for a few instructions it has no data on
        written = []
    for r in written:
        c = _canon(insn.reg_name(r))
        if c:
            writes.add(c)
    writes |= set(IMPLICIT_WRITES.get(base_mnem, ()))
    for op in insn.operands:
        if op.type == x86.X86_OP_REG:
            if op.access & 2:  # CS_AC_WRITE
                c = _canon(insn.reg_name(op.reg))
                if c:
                    writes.add(c)
            continue
        if op.type != x86.X86_OP_MEM or no_access:
            continue
        m = op.mem
        base_name = insn.reg_name(m.base) if m.base else None
        index_name = insn.reg_name(m.index) if m.index else None
        seg = insn.reg_name(m.segment) if m.segment else None
        base, index = _canon(base_name), _canon(index_name)
        computable = (
            seg in (None, "ds", "ss", "es", "cs")
            and (base_name is None or base is not None)
            and (index_name is None or index is not None)
        )
        addr32 = any(n is not None and n not in _WIDE for n in (base_name, index_name))
        access = op.access
        write = bool(access & 2) or rmw
        read = bool(access & 1) or rmw
        mem.append(
            MemOperand(
                base=base,
                index=index,
                scale=int(m.scale) or 1,
                disp=int(m.disp),
                size=int(op.size),
                read=read,
                write=write,
                computable=computable,
                addr32=addr32,
            )
        )
    text = f"{mnem} {insn.op_str}".strip()
    return Insn(insn.address, insn.size, text, tuple(mem), frozenset(writes))


def decode_pair(
    code: bytes, start: int, ip: int, prev: int | None
) -> tuple[Insn | None, Insn | None]:
    """(the instruction at ``prev``, the one at ``ip``) from ``code`` loaded at ``start``;
    the previous one only if it ends exactly at ``ip``. None where not decodable."""
    p = None
    if prev is not None and start <= prev < ip:
        p = decode_one(code[prev - start :], prev)
        if p is not None and p.end != ip:
            p = None
    at = decode_one(code[ip - start :], ip) if start <= ip < start + len(code) else None
    return p, at


def instruction_starts(code: bytes, base: int, stop: int) -> list[int]:
    """Addresses of the instructions a linear decode of ``code`` (loaded at ``base``) finds
    before ``stop``, and the first one at or after it (so a decode that lands exactly on
    ``stop`` ends with ``stop``). Stops early at bytes that do not decode."""
    md = _cs()
    out: list[int] = []
    for addr, _size, _m, _o in md.disasm_lite(code, base):
        out.append(addr)
        if addr >= stop:
            break
    return out


def previous_from(code: bytes, base: int, ip: int) -> int | None:
    """The start of the instruction before ``ip``, decoding from ``base`` (a symbol's start,
    an instruction boundary), or None when the decode does not land on ``ip``."""
    starts = instruction_starts(code, base, ip)
    if len(starts) >= 2 and starts[-1] == ip:
        return starts[-2]
    return None


def previous_sync(code: bytes, base: int, ip: int, tries: int = 16) -> int | None:
    """The start of the instruction before ``ip`` when no boundary before it is known:
    decode from each of ``tries`` starting points from 64 bytes back and keep the
    boundary most decodes that land on ``ip`` agree on (None when none lands on it)."""
    votes: Counter[int] = Counter()
    earliest = max(base, ip - SYNC_BACK)
    for start in range(earliest, min(ip, earliest + tries)):
        prev = previous_from(code[start - base :], start, ip)
        if prev is not None:
            votes[prev] += 1
    if not votes:
        return None
    ranked = votes.most_common(2)
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    return ranked[0][0] if ranked[0][1] > runner_up else None


def effective_address(
    op: MemOperand, regs: Mapping[str, int], next_ip: int, insn: Insn | None = None
) -> int | None:
    """The address ``op`` accesses, from the registers; None when they cannot say.

    ``next_ip`` is the address after the instruction (what RIP-relative operands add to).
    With ``insn`` given, the registers are those *after* it ran (the previous instruction of
    a sample): an operand whose base or index the instruction overwrote has no address."""
    if not op.computable:
        return None
    addr = op.disp
    for reg, mult in ((op.base, 1), (op.index, op.scale)):
        if reg is None:
            continue
        if reg == "ip":
            addr += next_ip * mult
            continue
        if insn is not None and reg in insn.writes:
            return None
        if reg not in regs:
            return None
        addr += regs[reg] * mult
    mask = 0xFFFFFFFF if op.addr32 else 0xFFFFFFFFFFFFFFFF
    return addr & mask


def needed_regs(insns: Iterable[Insn | None]) -> set[str]:
    """Registers to keep for these instructions' addresses (the rest stay out of the bundle)."""
    out: set[str] = set()
    for insn in insns:
        if insn is not None:
            out |= insn.address_regs()
    return out
