"""The code at sampled instruction addresses, copied from the live process, and its source lines.

Why copy code bytes into the bundle at the end of the capture rather than keep the list of
mappings and read the ELF files at analysis time:

- a bundle is analysed anywhere, later ("nothing after the bundle touches the live process"):
  the target's files are not there, or have been upgraded since;
- JIT code (an anonymous executable mapping) and libraries compiled at run time and deleted
  (``/tmp/x.so (deleted)``) have no file to read; ``/proc/PID/mem`` still has them while
  the process lives;
- the bytes needed are few: from the instruction before each hot IP to 16 bytes after it
  (about 20-30 bytes per address, at most :data:`MAX_IPS` addresses).

When the process has already exited, the bytes are read from the mapped files instead
(the mappings were snapshotted when the capture started); anonymous code is then lost and
said so. Reading ``/proc/PID/mem`` does not stop the target (no ptrace attach).
Source lines are looked up at the same time, while the files are at hand, from the DWARF
line tables of the mapped ELF file (pyelftools), for the hottest addresses and within a
time budget; a stripped library simply has none.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from diagnose.collect.mapped import open_mapped, parse_dev
from diagnose.formats import x86

MAX_IPS = 512  # distinct sampled user-space IPs whose code is copied (the hottest)
MAX_SWEEP = 64 * 1024  # decode from the symbol's start when it is at most this far back
AFTER = 16  # bytes kept after the IP (one whole instruction at it)
SRCLINE_IPS = 32  # at most this many hot IPs get source lines
SRCLINE_SECONDS = 2.0  # time budget for all source-line lookups (CPU of the host's cores)
SRCLINE_MAX_FILE = 512 * 2**20  # ELF files larger than this are not searched for lines


@dataclass(frozen=True)
class MapEntry:
    start: int
    end: int
    perms: str
    offset: int
    path: str  # "" for anonymous memory; "[vdso]", "/x.so (deleted)" as the kernel says
    dev: int = 0  # the mapped file's device and inode, as the maps line says
    inode: int = 0

    @property
    def file_backed(self) -> bool:
        return self.path.startswith("/") and not self.path.endswith(" (deleted)")

    def open(self, pid: int) -> int:
        """A descriptor of the very file mapped here (collect/mapped.py); OSError if none."""
        return open_mapped(pid, self.start, self.end, self.path, self.dev, self.inode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": hex(self.start),
            "end": hex(self.end),
            "perms": self.perms,
            "offset": hex(self.offset),
            "path": self.path,
        }


def parse_maps(text: str, need: str = "x") -> list[MapEntry]:
    """``/proc/PID/maps`` -> its mappings whose permissions include ``need`` (executable
    ones by default; "" for all), sorted by address."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        try:
            lo, hi = (int(x, 16) for x in parts[0].split("-", 1))
            offset = int(parts[2], 16)
        except ValueError:
            continue
        if need not in parts[1]:
            continue
        path = parts[5].strip() if len(parts) > 5 else ""
        inode = int(parts[4]) if parts[4].isdigit() else 0
        out.append(MapEntry(lo, hi, parts[1], offset, path, parse_dev(parts[3]), inode))
    out.sort(key=lambda m: m.start)
    return out


def read_maps(pid: int) -> list[MapEntry]:
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            return parse_maps(fh.read())
    except OSError:
        return []


def find_map(maps: list[MapEntry], addr: int) -> MapEntry | None:
    i = bisect.bisect_right([m.start for m in maps], addr) - 1
    if i >= 0 and maps[i].start <= addr < maps[i].end:
        return maps[i]
    return None


class CodeReader:
    """Reads code from the live process, else from the mapped files."""

    def __init__(self, pid: int, maps: list[MapEntry]) -> None:
        self.pid = pid
        self.maps = maps
        self.fd: int | None = None
        with contextlib.suppress(OSError):
            self.fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def read(self, lo: int, hi: int) -> tuple[bytes, str, MapEntry | None] | str:
        """Bytes [lo, hi) clamped to the mapping that holds ``hi - 1``, with their source
        ("memory" or "file") and the mapping; a string says why nothing could be read."""
        m = find_map(self.maps, hi - 1)
        if m is None:
            return "no executable mapping holds this address"
        lo, hi = max(lo, m.start), min(hi, m.end)
        if self.fd is not None:
            with contextlib.suppress(OSError):
                data = os.pread(self.fd, hi - lo, lo)
                if data:
                    return data, "memory", m
        if not m.file_backed:
            return f"the process is gone and {m.path or 'anonymous memory (JIT code)'} has no file"
        try:
            fd = m.open(self.pid)
            try:
                data = os.pread(fd, hi - lo, lo - m.start + m.offset)
            finally:
                os.close(fd)
        except OSError as exc:
            return f"cannot read {m.path}: {exc.strerror or exc}"
        return (data, "file", m) if data else f"{m.path} is shorter than its mapping"


@dataclass
class CodeAt:
    """What the bundle keeps about one sampled IP."""

    ip: int
    start: int  # address of code[0]: the previous instruction when it was found, else ip
    code: bytes
    prev: int | None
    how: str  # "symbol" (decoded from the symbol's start), "sync", or "none"
    source: str  # "memory" | "file"
    mapping: MapEntry | None

    def insns(self) -> tuple[x86.Insn | None, x86.Insn | None]:
        """(the previous instruction, the one at the IP), None where not decodable."""
        return x86.decode_pair(self.code, self.start, self.ip, self.prev)


def locate(
    reader: CodeReader, ips: Iterable[tuple[int, int | None]]
) -> tuple[dict[int, CodeAt], dict[int, str]]:
    """For each ``(ip, symbol start or None)``: its code and previous instruction; and the
    IPs whose code could not be read, with the reason."""
    found: dict[int, CodeAt] = {}
    failed: dict[int, str] = {}
    by_func: dict[int, list[int]] = {}
    loose: list[int] = []
    for ip, fstart in ips:
        if fstart is not None and 0 <= ip - fstart <= MAX_SWEEP:
            by_func.setdefault(fstart, []).append(ip)
        else:
            loose.append(ip)
    for fstart, members in by_func.items():
        got = reader.read(fstart, max(members) + AFTER)
        if isinstance(got, str):
            loose += members
            continue
        data, source, m = got
        base = max(fstart, m.start) if m else fstart
        starts = x86.instruction_starts(data, base, max(members))
        for ip in members:
            i = bisect.bisect_left(starts, ip)
            if i < len(starts) and starts[i] == ip and i > 0 and base == fstart:
                before = starts[i - 1]
                found[ip] = CodeAt(ip, before, data[before - base : ip - base + AFTER], before,
                                   "symbol", source, m)  # fmt: skip
            else:
                loose.append(ip)
    for ip in loose:
        got = reader.read(ip - x86.SYNC_BACK, ip + AFTER)
        if isinstance(got, str):
            failed[ip] = got
            continue
        data, source, m = got
        base = max(ip - x86.SYNC_BACK, m.start) if m is not None else ip - x86.SYNC_BACK
        if base > ip:
            failed[ip] = "the mapping ends before this address"
            continue
        prev = x86.previous_sync(data, base, ip)
        start = prev if prev is not None else ip
        found[ip] = CodeAt(ip, start, data[start - base : ip - base + AFTER], prev,
                           "sync" if prev is not None else "none", source, m)  # fmt: skip
    return found, failed


# --- source lines ------------------------------------------------------------------------


def _file_vaddr(elf: Any, file_offset: int) -> int | None:
    for seg in elf.iter_segments():
        if seg["p_type"] != "PT_LOAD":
            continue
        if seg["p_offset"] <= file_offset < seg["p_offset"] + seg["p_filesz"]:
            return int(file_offset - seg["p_offset"] + seg["p_vaddr"])
    return None


def _line_in_cu(dwarf: Any, cu: Any, vaddr: int) -> str | None:
    lp = dwarf.line_program_for_CU(cu)
    if lp is None:
        return None
    prev = None
    for entry in lp.get_entries():
        st = entry.state
        if st is None:
            continue
        if prev is not None and prev.address <= vaddr < st.address:
            files = lp["file_entry"]
            idx = prev.file if lp.header["version"] >= 5 else prev.file - 1
            if 0 <= idx < len(files):
                name = files[idx].name
                name = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
                return f"{os.path.basename(name)}:{prev.line}"
            return None
        prev = None if st.end_sequence else st
    return None


def source_lines(
    fd: int, addrs: dict[int, int], deadline: float, max_cus: int = 2000
) -> dict[int, str]:
    """``{runtime address: file offset}`` -> ``{runtime address: "file.c:LINE"}`` from the
    DWARF line table of the ELF file open at ``fd`` (closed here); what is not found is
    left out."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    out: dict[int, str] = {}
    fh = os.fdopen(fd, "rb")
    try:
        with fh:
            if os.fstat(fh.fileno()).st_size > SRCLINE_MAX_FILE:
                return out
            elf = ELFFile(fh)
            if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_line") is None:
                return out
            dwarf = elf.get_dwarf_info()
            aranges = dwarf.get_aranges()
            for addr, off in addrs.items():
                if time.monotonic() > deadline:
                    break
                vaddr = _file_vaddr(elf, off)
                if vaddr is None:
                    continue
                cu_off = aranges.cu_offset_at_addr(vaddr) if aranges is not None else None
                if cu_off is not None:
                    cus: Iterable[Any] = [dwarf.get_CU_at(cu_off)]
                else:
                    cus = (cu for i, cu in enumerate(dwarf.iter_CUs()) if i < max_cus)
                for cu in cus:
                    line = _line_in_cu(dwarf, cu, vaddr)
                    if line:
                        out[addr] = line
                        break
                    if time.monotonic() > deadline:
                        break
    except (OSError, ELFError, ValueError, KeyError, IndexError, AttributeError, AssertionError):
        pass  # a file we cannot parse has no source lines for us; the report shows addresses
    return out


def lookup_source_lines(
    pid: int, code: dict[int, CodeAt], order: list[int], wanted: set[int]
) -> dict[int, str]:
    """Source lines of the instructions at the ``wanted`` addresses (those that write a line
    other threads write too: the only ones a report names), hottest IP first, at most
    :data:`SRCLINE_IPS` IPs, within :data:`SRCLINE_SECONDS`.

    Why so narrow: pyelftools decodes a compilation unit's whole line program; for the
    interpreter's ceval.c that took 1-2 s of CPU and ~50 MB on the NumPy service when every
    hot IP was looked up."""
    deadline = time.monotonic() + SRCLINE_SECONDS
    per_file: dict[tuple[int, int, str], tuple[MapEntry, dict[int, int]]] = {}
    chosen = 0
    for ip in order:
        c = code.get(ip)
        if c is None or c.mapping is None or not c.mapping.file_backed:
            continue
        here = [a for a in (ip, c.prev) if a is not None and a in wanted]
        if not here:
            continue
        m = c.mapping
        for addr in here:
            if m.start <= addr < m.end:
                entry = per_file.setdefault((m.dev, m.inode, m.path), (m, {}))
                entry[1][addr] = addr - m.start + m.offset
        chosen += 1
        if chosen >= SRCLINE_IPS:
            break
    out: dict[int, str] = {}
    for m, addrs in per_file.values():
        if time.monotonic() > deadline:
            break
        with contextlib.suppress(OSError):  # not the file mapped any more: no lines from it
            out.update(source_lines(m.open(pid), addrs, deadline))
    return out
