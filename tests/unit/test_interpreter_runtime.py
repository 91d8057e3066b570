"""Where CPython's ``_PyRuntime`` (and so the GIL) lies in a process, read from its
interpreter's ELF symbols (collect/system.py), checked against this very process."""

from __future__ import annotations

import ctypes
import os
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
