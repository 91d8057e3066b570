"""``perf script`` without the symbol tables it is slow to load: diagnose names those
libraries' frames itself.

perf loads the whole ``.symtab`` of every library a recorded stack passes through, once
per ``perf script``: libtorch_cpu.so's 530,000 symbols cost 0.55 CPU-s and 218 MB each
time, twice per capture, 93% of a torch service's conversion (docs/performance.md,
section 2). For a target that maps such a library (more than :data:`BIG_SYMTAB` symbols),
perf reads the recording through a ``--symfs`` that mirrors every file the target maps but
those: it names every other frame as before and prints the address of each frame in them,
which :meth:`BigLibraries.name` looks up in the table formats/elf_symbols.py reads in tens
of milliseconds. The names are the same mangled ones perf would print with
``--no-demangle``, demangled afterwards the same way.

Used only where it can be exact: the target in diagnose's own mount namespace (perf would
otherwise read its files through the target's root, which the mirror is not in), and its
maps readable. Elsewhere perf loads everything, as before.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import threading
from typing import NamedTuple

from diagnose.formats.elf_symbols import ElfSymbols, symtab_size

#: a library with more symbols than this is named by diagnose, not perf (libtorch_cpu.so:
#: 530,000; libtorch_python.so: 59,000, 0.14 s of each perf script's start here against
#: 0.014 s for diagnose to read; tokenizers' 25,600; onnxruntime's: 24,000; below it:
#: libpython3.11's 16,000, libopenblas's 12,000)
BIG_SYMTAB = 20_000
#: where perf looks for separate debug files and the kernel's image, mirrored as they are
#: (the kernel's symbols come from --kallsyms where it finds no image)
_SYSTEM_DIRS = ("/usr/lib/debug", "/boot", "/lib/modules")


class Mapping(NamedTuple):
    start: int
    end: int
    pgoff: int
    path: str


def parse_maps(text: str) -> list[Mapping]:
    """The file-backed mappings of a ``/proc/PID/maps`` text (paths as the kernel wrote
    them; a deleted file's are left out: nothing can read it by name)."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/") or parts[5].endswith(" (deleted)"):
            continue
        lo, _, hi = parts[0].partition("-")
        try:
            out.append(Mapping(int(lo, 16), int(hi, 16), int(parts[2], 16), parts[5]))
        except ValueError:
            continue
    return out


def _same_mount_namespace(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt")
    except OSError:
        return False


def _file_key(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=1024)
def _symbols_in(path: str, key: tuple[int, int, int, int]) -> int | None:
    return symtab_size(path)


_tables_lock = threading.Lock()


@functools.lru_cache(maxsize=4)
def _table(path: str, key: tuple[int, int, int, int]) -> ElfSymbols | None:
    """One table per file version, shared by a capture's two conversions (they run side
    by side) and kept for the next capture of the same process."""
    return ElfSymbols.load(path)


class BigLibraries:
    """The target's libraries whose frames diagnose names, their mappings, and the symfs
    that hides them from perf. :meth:`close` removes the symfs."""

    def __init__(
        self,
        root: str,
        maps: dict[str, list[Mapping]],
        keys: dict[str, tuple[int, int, int, int]],
    ) -> None:
        self.root = root
        self.maps = maps
        self._keys = keys  # each file's version, read once: no system call per frame
        self._tables: dict[str, ElfSymbols | None] = {}

    @property
    def paths(self) -> list[str]:
        return sorted(self.maps)

    def name(self, ip: int, dso: str) -> str | None:
        """The mangled symbol at address ``ip`` in library ``dso`` as perf printed them,
        or None (not one of these libraries, or no symbol covers it). perf 6.1 prints a
        library's call chain addresses relative to it (the file offset); an address inside
        one of the target's mappings of it is taken as absolute."""
        maps = self.maps.get(dso)
        if not maps:
            return None
        offset = ip
        for m in maps:
            if m.start <= ip < m.end:
                offset = ip - m.start + m.pgoff
                break
        if dso not in self._tables:
            with _tables_lock:
                self._tables[dso] = _table(dso, self._keys[dso])
        table = self._tables[dso]
        return None if table is None else table.name_at(offset)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)  # links only: never followed


class Namer:
    """:meth:`BigLibraries.name` for one conversion, counting what it named."""

    def __init__(self, big: BigLibraries | None = None) -> None:
        self.big = big  # (None: names nothing)
        # counted per call: once per distinct frame line (parse_script caches each), so
        # these are distinct addresses, not every frame of every sample
        self.named = 0  # addresses named here
        self.unnamed = 0  # addresses in those libraries no symbol covers

    def __call__(self, ip: int, dso: str) -> str | None:
        if self.big is None or dso not in self.big.maps:
            return None
        sym = self.big.name(ip, dso)
        if sym is None:
            self.unnamed += 1
        else:
            self.named += 1
        return sym


_shared_lock = threading.Lock()
_shared: dict[int, tuple[BigLibraries | None, int]] = {}


def acquire(pid: int) -> BigLibraries | None:
    """:func:`prepare` once for the conversions of one capture of ``pid`` (they run side by
    side): the first builds the symfs, the others share it; :func:`release` each."""
    with _shared_lock:
        if pid in _shared:
            big, users = _shared[pid]
        else:
            big, users = prepare(pid), 0
        _shared[pid] = (big, users + 1)
        return big


def release(pid: int) -> None:
    """The end of one conversion's use of :func:`acquire`'s symfs; the last removes it."""
    with _shared_lock:
        big, users = _shared.pop(pid, (None, 0))
        if users > 1:
            _shared[pid] = (big, users - 1)
            return
    if big is not None:
        big.close()


def prepare(pid: int) -> BigLibraries | None:
    """The symfs for a ``perf script`` of ``pid``'s recording, where it maps a library too
    large for perf to load quickly; None where it maps none, or where this cannot be exact
    (the target in another mount namespace, its maps unreadable): perf then loads all."""
    if not _same_mount_namespace(pid):
        return None
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="surrogateescape") as fh:
            mappings = parse_maps(fh.read())
    except OSError:
        return None
    paths = {m.path for m in mappings}
    big: dict[str, list[Mapping]] = {}
    keys = {}
    for path in paths:
        key = _file_key(path)
        n = None if key is None else _symbols_in(path, key)
        if key is not None and n is not None and n > BIG_SYMTAB:
            big[path] = [m for m in mappings if m.path == path]
            keys[path] = key
    if not big:
        return None
    root = tempfile.mkdtemp(prefix="diagnose-symfs-")
    try:
        for path in sorted(paths - big.keys()) + [d for d in _SYSTEM_DIRS if os.path.isdir(d)]:
            _link(root, path)
    except OSError:
        shutil.rmtree(root, ignore_errors=True)
        return None
    return BigLibraries(root, big, keys)


def _link(root: str, path: str) -> None:
    """A link at ``root`` + ``path`` to ``path``. Each directory on the way is made or
    opened without following a link (``O_NOFOLLOW``), so a path the target controls can
    neither climb out of ``root`` nor write through a link (a mapped file replaced by a
    link to a directory since)."""
    parts = path.split("/")[1:]
    if not parts or any(p in ("", ".", "..") for p in parts):
        return  # not a plain absolute path: perf will not find it (its frames go unnamed)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                return  # a link made for another path: leave this one out
            os.close(fd)
            fd = sub
        with contextlib.suppress(FileExistsError):
            os.symlink(path, parts[-1], dir_fd=fd)
    finally:
        os.close(fd)
