"""Where CPython's ``_PyRuntime`` (and so the GIL) lies in a process, read from its
interpreter's ELF symbols (collect/system.py), checked against this very process."""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
import sys

from diagnose.collect import system


def _interpreter_elf() -> str:
    with open("/proc/self/maps") as fh:
        for line in fh:
            path = line.split(None, 5)[-1].strip()
            if "libpython" in os.path.basename(path):
                return path
    return os.path.realpath(sys.executable)


def test_the_runtime_range_is_where_this_process_has_it():
    real = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    got = system.interpreter_runtime(os.getpid(), _interpreter_elf())
    assert got is not None and got["symbol"] == "_PyRuntime"
    assert int(got["start"], 16) == real < int(got["end"], 16)


def test_a_copy_of_the_interpreter_mapped_for_reading_is_not_its_image():
    # A symbol reader in the target maps the file whole; that mapping is not the loaded image.
    real = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    elf = _interpreter_elf()
    with open(elf, "rb") as fh, mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ) as copy:
        got = system.interpreter_runtime(os.getpid(), elf)
        assert len(copy) > 0
    assert got is not None and int(got["start"], 16) == real


def test_the_load_base_skips_whole_file_mappings_below_and_above_the_image():
    maps = "\n".join(
        [
            "7f0000000000-7f0000400000 r--s 00000000 08:01 7 /usr/lib/libpython3.11.so",
            "7f1000000000-7f1000100000 r--p 00000000 08:01 7 /usr/lib/libpython3.11.so",
            "7f1000100000-7f1000300000 r-xp 00100000 08:01 7 /usr/lib/libpython3.11.so",
            "7f1000300000-7f1000380000 r--p 00300000 08:01 7 /usr/lib/libpython3.11.so",
            "7f2000000000-7f2000400000 r--s 00000000 08:01 7 /usr/lib/libpython3.11.so",
        ]
    )
    assert system._load_base(maps, ("/usr/lib/libpython3.11.so",)) == 0x7F1000000000
    assert system._load_base(maps.splitlines()[0], ("/usr/lib/libpython3.11.so",)) is None


def test_a_second_capture_reads_the_symbols_from_the_cache():
    elf = _interpreter_elf()
    first = system.interpreter_runtime(os.getpid(), elf)
    hits = system._runtime_symbol.cache_info().hits
    assert system.interpreter_runtime(os.getpid(), elf) == first
    assert system._runtime_symbol.cache_info().hits == hits + 1


def test_a_file_without_the_symbol_gives_none(tmp_path):
    fake = tmp_path / "python"
    fake.write_bytes(b"\x7fELF not really")
    assert system.interpreter_runtime(os.getpid(), str(fake)) is None


def test_a_static_variable_lies_in_its_library_s_data_segment():
    # _PyRuntime is a static of the interpreter (libpython or the executable): its address
    # falls in that file's writable data as this process maps it, the .bss included
    real = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    segments = system.data_segments(os.getpid())
    assert segments is not None
    owner = [s for s in segments if int(s["start"], 16) <= real < int(s["end"], 16)]
    assert [s["library"] for s in owner] == [os.path.basename(_interpreter_elf())]
    # file names only, never a path
    assert all("/" not in s["library"] for s in segments)


def test_the_data_segments_of_a_process_gone_are_unknown():
    assert system.data_segments(2**22 + 12345) is None


def test_the_memory_touched_since_the_bits_were_cleared_is_what_was_read():
    import numpy as np

    table = np.ones(64 * 1024 * 1024 // 8)  # 64 MiB, touched as it is filled
    pid = os.getpid()
    assert system.clear_referenced(pid) == ""
    table.sum()  # reads all of it
    all_of_it = system.referenced_bytes(pid)
    assert system.clear_referenced(pid) == ""
    table[:1000].sum()  # reads 8 KB of it
    a_little = system.referenced_bytes(pid)
    assert all_of_it is not None and all_of_it >= 60 * 1024 * 1024
    assert a_little is not None and a_little < 24 * 1024 * 1024


def test_reading_its_libraries_files_from_another_process_touches_none_of_its_memory():
    # GIVEN a process at rest, and another reading every library file it maps, as perf and
    # py-spy do for their symbols (the page cache marks those pages referenced for all)
    rest = subprocess.Popen(
        [sys.executable, "-c", "import numpy, sys; print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert rest.stdout is not None and rest.stdout.readline().startswith("ready")
        with open(f"/proc/{rest.pid}/maps") as fh:
            files = {p[5].strip() for p in (x.split(None, 5) for x in fh) if len(p) == 6}
        libraries = sorted(f for f in files if ".so" in os.path.basename(f))
        assert len(libraries) >= 5
        assert system.clear_referenced(rest.pid) == ""
        for path in libraries:
            with open(path, "rb") as lib:
                while lib.read(1 << 20):
                    pass
        # THEN the data it touched meanwhile is what it touched at rest: almost nothing
        touched = system.referenced_bytes(rest.pid)
        assert touched is not None and touched < 2 * 1024 * 1024
    finally:
        rest.kill()
        rest.wait()


def test_the_memory_of_a_process_gone_is_unknown_and_said_so():
    assert "could not be cleared" in system.clear_referenced(2**22 + 12345)
    assert system.referenced_bytes(2**22 + 12345) is None
