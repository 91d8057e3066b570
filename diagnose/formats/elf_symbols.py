"""The function symbols of an ELF file's ``.symtab``, read as arrays, for the few libraries
whose tables are too large for ``perf script`` to load in time.

``perf script`` loads the whole symbol table of every library a stack passes through, once
per run: for libtorch_cpu.so's 530,000 symbols that is 0.55 CPU-s and 218 MB, twice per
capture (the on-CPU samples and the scheduler trace), 93% of a torch service's conversion
(docs/performance.md, section 2). Read here with numpy straight from the file's mapped
bytes, the same table takes tens of milliseconds; only the names of the addresses a capture
actually hit are read from the string table.

ELF64, little-endian only (x86-64, aarch64); anything else, or a file that is not what its
headers say, gives None and the library is left to perf. The file belongs to the target:
every offset is checked against its size and a name is cut at :data:`MAX_NAME` bytes.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_PHDR = struct.Struct("<IIQQQQQQ")
#: Elf64_Sym, as numpy reads it (numpy is imported only where a table is read: not on the
#: capture's start)
_SYM_FIELDS: list[tuple[str, str]] = [
    ("name", "<u4"),
    ("info", "u1"),
    ("other", "u1"),
    ("shndx", "<u2"),
    ("value", "<u8"),
    ("size", "<u8"),
]
_SYM_SIZE = 24
SHT_SYMTAB = 2
PT_LOAD = 1
STT_FUNC = 2
STT_GNU_IFUNC = 10
MAX_SYMBOLS = 10_000_000  # a .symtab claiming more is not a real library's
MAX_SECTIONS = 65_000
MAX_NAME = 4096  # bytes of one symbol name read (C++ template names run long)
_MAX_UNDERSCORES = 16  # leading underscores told apart


class Section(NamedTuple):
    type: int
    offset: int
    size: int
    link: int
    entsize: int
    name: str = ""


class Segment(NamedTuple):
    offset: int
    vaddr: int
    filesz: int


class _Headers(NamedTuple):
    sections: list[Section]
    loads: list[Segment]
    machine: int = 0

    def named(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


def _headers(buf: mmap.mmap | bytes) -> _Headers | None:
    """The section and loadable segment headers of an ELF64 little-endian image, or None."""
    size = len(buf)
    if size < _EHDR.size or bytes(buf[:4]) != b"\x7fELF" or buf[4] != 2 or buf[5] != 1:
        return None
    h = _EHDR.unpack_from(buf, 0)
    phoff, shoff, phentsize, phnum, shentsize, shnum = h[5], h[6], h[9], h[10], h[11], h[12]
    if shentsize != _SHDR.size or shnum > MAX_SECTIONS or shoff + shnum * shentsize > size:
        return None
    raw = [_SHDR.unpack_from(buf, shoff + i * shentsize) for i in range(shnum)]
    names = raw[h[13]] if h[13] < shnum else None  # the section names' string table
    sections = []
    for s in raw:
        name = ""
        if names is not None and s[0] < names[5] and names[4] + names[5] <= size:
            start = names[4] + s[0]
            end = buf.find(b"\0", start, names[4] + names[5])
            name = bytes(buf[start : end if end >= 0 else start]).decode("ascii", "replace")
        sections.append(Section(s[1], s[4], s[5], s[6], s[9], name))
    loads = []
    if phentsize == _PHDR.size and phoff + phnum * phentsize <= size:
        for i in range(phnum):
            p = _PHDR.unpack_from(buf, phoff + i * phentsize)
            if p[0] == PT_LOAD:
                loads.append(Segment(offset=p[2], vaddr=p[3], filesz=p[5]))
    return _Headers(sections, loads, h[2])


def _symtab(headers: _Headers, size: int) -> tuple[Section, Section] | None:
    """(.symtab, its string table), each within a file of ``size`` bytes, or None."""
    for s in headers.sections:
        if s.type != SHT_SYMTAB or s.entsize != _SYM_SIZE:
            continue
        if s.offset + s.size > size or s.size // _SYM_SIZE > MAX_SYMBOLS:
            return None
        if s.link >= len(headers.sections):
            return None
        strtab = headers.sections[s.link]
        if strtab.offset + strtab.size > size:
            return None
        return s, strtab
    return None


def _open_regular(path: str) -> int | None:
    """A read-only descriptor of ``path`` if it is a regular file (never a device or a
    FIFO the target mapped, whose read could block or act), else None."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _map(path: str) -> mmap.mmap | None:
    fd = _open_regular(path)
    if fd is None:
        return None
    try:
        return mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    except (OSError, ValueError):  # empty, or not mappable
        return None
    finally:
        os.close(fd)


def symtab_size(path: str) -> int | None:
    """How many symbols ``path``'s ``.symtab`` holds (0: none, a stripped library), read
    from its headers alone; None when it is no ELF64 little-endian regular file."""
    mm = _map(path)
    if mm is None:
        return None
    with contextlib.closing(mm):
        headers = _headers(mm)
        if headers is None:
            return None
        found = _symtab(headers, len(mm))
        return 0 if found is None else found[0].size // _SYM_SIZE


STB_GLOBAL = 1
STB_WEAK = 2


def _one_per_address(
    starts: np.ndarray,
    sizes: np.ndarray,
    binding: np.ndarray,
    names: np.ndarray,
    strtab: np.ndarray,
) -> np.ndarray:
    """Which of the symbols (sorted by address, in table order at ties; ``names``: their
    offsets into ``strtab``, the string table's bytes) to keep, one per address: where
    aliases share one (``sgemm_`` and ``mkl_blas__sgemm``), the one perf keeps, so that a
    frame reads as perf prints it. perf's ``choose_best_symbol`` (tools/perf/util/symbol.c)
    prefers, in order: a size over none, not weak over weak, global over not, fewer leading
    underscores, the longer name, else the first in the table; as one sort key here (libtorch
    has 38,000 such addresses)."""
    import numpy as np

    keep = np.ones(len(starts), dtype=bool)
    tied = starts[1:] == starts[:-1]
    if not tied.any():
        return keep
    member = np.zeros(len(starts), dtype=bool)
    member[1:] |= tied
    member[:-1] |= tied
    idx = np.flatnonzero(member)
    group = np.cumsum(np.r_[True, starts[idx][1:] != starts[idx][:-1]])
    offs = names[idx].astype(np.int64)
    nul = np.flatnonzero(strtab == 0)
    at = np.minimum(np.searchsorted(nul, offs), len(nul) - 1) if len(nul) else None
    length = np.zeros(len(idx), dtype=np.int64) if at is None else np.maximum(nul[at] - offs, 0)
    underscores = np.zeros(len(idx), dtype=np.int64)
    going = length > 0
    for k in range(_MAX_UNDERSCORES):
        going &= (k < length) & (strtab[np.minimum(offs + k, len(strtab) - 1)] == ord("_"))
        underscores += going
    order = np.lexsort(
        (
            -idx,  # (last key: the first in the table wins a tie)
            length,
            -underscores,
            binding[idx] == STB_GLOBAL,
            binding[idx] != STB_WEAK,
            sizes[idx] > 0,
            group,
        )
    )
    sorted_group = group[order]
    best = order[np.r_[sorted_group[1:] != sorted_group[:-1], True]]
    keep[idx] = False
    keep[idx[best]] = True
    return keep


def _read_name(mm: mmap.mmap, strtab: Section, offset: int) -> str | None:
    """The name at ``offset`` of the string table, cut at :data:`MAX_NAME` bytes."""
    if offset >= strtab.size:
        return None
    start = strtab.offset + offset
    stop = min(start + MAX_NAME, strtab.offset + strtab.size)
    end = mm.find(b"\0", start, stop)
    return mm[start : end if end >= 0 else stop].decode("utf-8", "replace") or None


EM_X86_64 = 62
EM_AARCH64 = 183
_RELA_SIZE = 24


class Plt(NamedTuple):
    """The ``.plt`` entries perf 6.1 names ``NAME@plt`` (``dso__synthesize_plt_symbols``):
    after a header, one entry per ``.rela.plt`` relocation, in its order, named after the
    ``.dynsym`` symbol it binds."""

    start: int  # file offset of the first entry
    entry: int
    entries: int
    rela: Section
    dynsym: Section
    dynstr: Section


def _plt(headers: _Headers, size: int) -> Plt | None:
    plt, rela = headers.named(".plt"), headers.named(".rela.plt")
    if plt is None or rela is None or rela.entsize != _RELA_SIZE:
        return None
    if headers.machine == EM_AARCH64:
        header, entry = 32, 16
    elif headers.machine == EM_X86_64:
        header = entry = plt.entsize
    else:
        return None
    if entry <= 0 or rela.link >= len(headers.sections):
        return None
    dynsym = headers.sections[rela.link]
    if dynsym.link >= len(headers.sections):
        return None
    dynstr = headers.sections[dynsym.link]
    if any(s.offset + s.size > size for s in (plt, rela, dynsym, dynstr)):
        return None
    entries = min(rela.size // _RELA_SIZE, max(0, plt.size - header) // entry)
    return Plt(plt.offset + header, entry, entries, rela, dynsym, dynstr)


class ElfSymbols:
    """The function symbols of one file's ``.symtab``, sorted by address, for
    :meth:`name_at`. Open with :meth:`load`; :meth:`close` releases the file."""

    def __init__(
        self,
        mm: mmap.mmap,
        loads: list[Segment],
        starts: np.ndarray,
        ends: np.ndarray,
        names: np.ndarray,
        strtab: Section,
        plt: Plt | None = None,
    ) -> None:
        self._plt = plt
        self._mm = mm
        self._loads = loads
        self._starts = starts
        self._ends = ends
        self._names = names
        self._strtab = strtab

    @classmethod
    def load(cls, path: str) -> ElfSymbols | None:
        """The table of ``path``, or None (not ELF64 little-endian, no ``.symtab``, or
        headers that do not fit the file)."""
        mm = _map(path)
        if mm is None:
            return None
        headers = _headers(mm)
        found = None if headers is None else _symtab(headers, len(mm))
        if headers is None or found is None or not headers.loads:
            mm.close()
            return None
        import numpy as np

        symtab, strtab = found
        syms = np.frombuffer(mm, np.dtype(_SYM_FIELDS), symtab.size // _SYM_SIZE, symtab.offset)
        kind = syms["info"] & 0xF
        keep = ((kind == STT_FUNC) | (kind == STT_GNU_IFUNC)) & (syms["shndx"] != 0)
        keep &= syms["value"] != 0
        funcs = syms[keep]
        del syms  # no view of the map may outlive close()
        funcs = funcs[np.argsort(funcs["value"], kind="stable")]  # (in table order at ties)
        strings = np.frombuffer(mm, np.uint8, strtab.size, strtab.offset)
        binding = funcs["info"] >> 4
        funcs = funcs[
            _one_per_address(funcs["value"], funcs["size"], binding, funcs["name"], strings)
        ]
        del strings
        starts = funcs["value"].copy()
        sizes = funcs["size"]
        # a symbol without a size runs to the next one (as perf reads them)
        following = np.append(starts[1:], np.uint64(0xFFFFFFFFFFFFFFFF))
        ends = np.where(sizes > 0, starts + sizes, following)
        names = funcs["name"].copy()
        return cls(mm, headers.loads, starts, ends, names, strtab, _plt(headers, len(mm)))

    def __len__(self) -> int:
        return len(self._starts)

    def vaddr(self, file_offset: int) -> int | None:
        """The address in the file's own layout of the byte at ``file_offset``."""
        for seg in self._loads:
            if seg.offset <= file_offset < seg.offset + seg.filesz:
                return file_offset - seg.offset + seg.vaddr
        return None

    def name_at(self, file_offset: int) -> str | None:
        """The function containing the code at ``file_offset``, or None."""
        plt = self._plt
        if plt is not None and plt.start <= file_offset < plt.start + plt.entries * plt.entry:
            return self._plt_name(plt, (file_offset - plt.start) // plt.entry)
        addr = self.vaddr(file_offset)
        if addr is None or not len(self._starts):
            return None
        i = int(self._starts.searchsorted(self._starts.dtype.type(addr), side="right")) - 1
        if i < 0 or addr >= int(self._ends[i]):
            return None
        return self._name(int(self._names[i]))

    def _plt_name(self, plt: Plt, i: int) -> str:
        (info,) = struct.unpack_from("<Q", self._mm, plt.rela.offset + i * _RELA_SIZE + 8)
        sym = info >> 32
        name = None
        if (sym + 1) * _SYM_SIZE <= plt.dynsym.size:
            (st_name,) = struct.unpack_from("<I", self._mm, plt.dynsym.offset + sym * _SYM_SIZE)
            name = _read_name(self._mm, plt.dynstr, st_name)
        return f"{name}@plt" if name else f"offset_{plt.start + i * plt.entry:#x}@plt"

    def _name(self, offset: int) -> str | None:
        return _read_name(self._mm, self._strtab, offset)

    def close(self) -> None:
        self._mm.close()
