"""collect/perf/symfs.py: which libraries diagnose names itself, the mirror perf reads the
others through, and the names it gives, on the test process's own mappings."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest

from diagnose.collect.perf import symfs
from diagnose.formats.elf_symbols import symtab_size

MAPS = """\
55d0c0a00000-55d0c0a2c000 r--p 00000000 08:01 1311 /usr/bin/python3.11
7f5a1c000000-7f5a1c021000 rw-p 00000000 00:00 0
7f5a20000000-7f5a24000000 r-xp 01200000 08:01 2222 /opt/venv/lib/libtorch_cpu.so
7f5a28000000-7f5a28001000 r-xp 00000000 08:01 3333 /tmp/gone.so (deleted)
7ffd2c1f0000-7ffd2c212000 rw-p 00000000 00:00 0                          [stack]
7ffd2c3f6000-7ffd2c3f8000 r-xp 00000000 00:00 0                          [vdso]
garbage line
"""


def test_maps_keep_the_files_a_name_can_reach():
    got = symfs.parse_maps(MAPS)
    assert [m.path for m in got] == ["/usr/bin/python3.11", "/opt/venv/lib/libtorch_cpu.so"]
    torch = got[1]
    assert (torch.start, torch.end, torch.pgoff) == (0x7F5A20000000, 0x7F5A24000000, 0x1200000)


def _function_and_file() -> tuple[int, str, str]:
    """(the address of a C function of this interpreter, the file mapping it, its name)."""
    addr = ctypes.cast(ctypes.pythonapi.PyLong_FromLong, ctypes.c_void_p).value
    assert addr is not None
    for m in symfs.parse_maps(Path("/proc/self/maps").read_text()):
        if m.start <= addr < m.end:
            return addr, m.path, "PyLong_FromLong"
    raise AssertionError("the function is in no file mapping")


def test_a_library_over_the_threshold_is_named_here_and_hidden_from_perf(monkeypatch):
    # GIVEN the file holding this interpreter's C functions, with a .symtab
    addr, path, name = _function_and_file()
    n = symtab_size(path)
    if not n:
        pytest.skip(f"{path} has no .symtab (a stripped interpreter)")
    # WHEN it counts as too large for perf (the threshold lowered under it)
    monkeypatch.setattr(symfs, "BIG_SYMTAB", n - 1)
    big = symfs.prepare(os.getpid())
    assert big is not None
    try:
        assert path in big.paths
        # THEN the mirror links every smaller mapped file and leaves this one out
        root = Path(big.root)
        assert not os.path.lexists(root / path.lstrip("/"))
        others = {m.path for m in symfs.parse_maps(Path("/proc/self/maps").read_text())}
        others -= set(big.paths)  # (as large or larger: named here too)
        for other in others:
            if "/../" not in other and os.path.exists(other):
                link = root / other.lstrip("/")
                assert link.is_symlink() and os.readlink(link) == other, other
        # AND its frames are named here, as perf names them, by their address in the
        # process or relative to the file (as perf 6.1 prints a library's call chains)
        namer = symfs.Namer(big)
        assert namer(addr, path) == name
        mapping = next(m for m in big.maps[path] if m.start <= addr < m.end)
        assert namer(addr - mapping.start + mapping.pgoff, path) == name
        assert namer(addr, "/elsewhere/libother.so") is None
        assert (namer.named, namer.unnamed) == (2, 0)
    finally:
        big.close()
    assert not os.path.exists(big.root)


def test_the_conversions_of_one_capture_share_one_symfs(monkeypatch):
    # GIVEN every library counted large, and two conversions of one capture
    monkeypatch.setattr(symfs, "BIG_SYMTAB", -1)
    pid = os.getpid()
    first = symfs.acquire(pid)
    second = symfs.acquire(pid)
    assert first is not None and second is first
    # THEN the symfs stays until the last one is done with it
    symfs.release(pid)
    assert os.path.isdir(first.root)
    symfs.release(pid)
    assert not os.path.exists(first.root)
    # AND the next capture builds its own
    third = symfs.acquire(pid)
    assert third is not None and third is not first
    symfs.release(pid)
    assert not os.path.exists(third.root)


def test_nothing_is_prepared_when_no_library_is_that_large(monkeypatch):
    monkeypatch.setattr(symfs, "BIG_SYMTAB", 10**9)
    assert symfs.prepare(os.getpid()) is None


def test_a_gone_process_gets_no_symfs():
    assert symfs.prepare(2**22 + 12345) is None


def test_links_never_climb_out_of_the_mirror_nor_write_through_a_link(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    # GIVEN paths the target controls: with '..', and one under a link made for another
    symfs._link(str(root), "/../outside/evil.so")
    symfs._link(str(root), "/a/./b.so")
    (root / "lib").symlink_to(outside)  # as if a mapped file had become a directory
    symfs._link(str(root), "/lib/x/y.so")
    # THEN nothing is written outside the mirror
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in root.iterdir()) == ["lib"]
    # AND an ordinary path is linked
    symfs._link(str(root), "/usr/lib/libz.so.1")
    assert os.readlink(root / "usr/lib/libz.so.1") == "/usr/lib/libz.so.1"
