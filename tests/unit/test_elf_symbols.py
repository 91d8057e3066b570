"""formats/elf_symbols.py against real libraries: one built here with known functions (the
names binutils' ``nm`` reads are the reference), and files that are no library."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from diagnose.formats.elf_symbols import ElfSymbols, _one_per_address, symtab_size

SOURCE = r"""
#include <stdio.h>
#include <string.h>
int exported_add(int a, int b) { return a + b; }
__attribute__((visibility("hidden"))) int hidden_kernel_0(int a) { return a * 3 + 1; }
static int local_helper(int a) { return a ^ 0x55; }
int call_local(int a) { return local_helper(a) + 2; }
int exported_add_alias(int a, int b) __attribute__((alias("exported_add")));
int exported_add_weak_longest_name(int a, int b) __attribute__((weak, alias("exported_add")));
int calls_out(const char *s) { return puts(s) + (int)strlen(s); }
int big_function(int a) {
    int s = 0;
    for (int i = 0; i < a; i++) { s += i * a; if (s > 1000) s -= 999; }
    return s;
}
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or shutil.which("nm") is None:
        pytest.skip("no C compiler and nm (apt-get install gcc) to build a library")
    d = tmp_path_factory.mktemp("elf")
    src = d / "lib.c"
    src.write_text(SOURCE)
    out = d / "libknown.so"
    # -O0 keeps local_helper a function of its own; calls to libc go through a classic .plt
    # (no .plt.sec: perf 6.1 names .plt entries), bound lazily
    argv = [cc, "-O0", "-shared", "-fPIC", "-fcf-protection=none", "-Wl,-z,lazy"]
    subprocess.run([*argv, "-o", str(out), str(src)], check=True)
    return out


def _nm(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of the defined functions, as binutils reads them."""
    res = subprocess.run(
        ["nm", "--defined-only", "-S", str(path)], capture_output=True, text=True, check=True
    )
    out = {}
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "TtW":
            out[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
    return out


def _file_offset(lib: Path, vaddr: int) -> int:
    """The file offset of ``vaddr`` by the loadable segments ``readelf`` lists."""
    res = subprocess.run(["readelf", "-lW", str(lib)], capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        parts = line.split()
        if parts[:1] == ["LOAD"]:
            off, va, filesz = int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)
            if va <= vaddr < va + filesz:
                return vaddr - va + off
    raise AssertionError(f"{vaddr:#x} is in no segment")


def test_every_function_is_found_at_its_first_last_and_middle_byte(library):
    # GIVEN a library built here, and the functions nm finds in it (each at an address of
    # its own: aliases below)
    functions = _nm(library)
    assert {"exported_add", "hidden_kernel_0", "local_helper", "big_function"} <= set(functions)
    sharing = Counter(addr for addr, _ in functions.values())
    table = ElfSymbols.load(str(library))
    assert table is not None
    try:
        for name, (addr, size) in functions.items():
            if sharing[addr] > 1:
                continue
            assert size > 0, name
            for at in (addr, addr + size // 2, addr + size - 1):
                # THEN each byte of a function's code names that function
                assert table.name_at(_file_offset(library, at)) == name, (name, hex(at))
    finally:
        table.close()


def test_of_aliases_at_one_address_the_one_perf_keeps_names_it(library):
    # GIVEN three names for one function: global, global with a longer name, and weak with
    # the longest
    functions = _nm(library)
    addr = functions["exported_add"][0]
    assert functions["exported_add_alias"][0] == functions["exported_add_weak_longest_name"][0]
    assert functions["exported_add_alias"][0] == addr
    table = ElfSymbols.load(str(library))
    assert table is not None
    try:
        # THEN it reads as perf prints it: not the weak one, then the longer name
        assert table.name_at(_file_offset(library, addr)) == "exported_add_alias"
    finally:
        table.close()


def test_plt_entries_are_named_as_perf_names_them(library):
    # GIVEN the library's calls out to libc, through its .plt, as objdump labels them
    res = subprocess.run(
        ["objdump", "-d", "-j", ".plt", str(library)], capture_output=True, text=True
    )
    if res.returncode != 0:
        pytest.skip(f"objdump cannot read the .plt: {res.stderr.strip()[:200]}")
    labels = re.findall(r"^([0-9a-f]+) <(\w+@plt)>:", res.stdout, re.M)
    assert {name for _, name in labels} >= {"puts@plt", "strlen@plt"}, res.stdout[:2000]
    table = ElfSymbols.load(str(library))
    assert table is not None
    try:
        for addr, name in labels:
            # THEN every byte of each entry carries its NAME@plt
            for byte in (0, 8, 15):
                assert table.name_at(_file_offset(library, int(addr, 16) + byte)) == name
    finally:
        table.close()


def test_the_table_counts_its_symbols_from_the_headers(library):
    n = symtab_size(str(library))
    assert n is not None and n >= len(_nm(library))


def test_a_stripped_library_has_no_table(library, tmp_path):
    stripped = tmp_path / "libstripped.so"
    shutil.copy(library, stripped)
    if shutil.which("strip") is None:
        pytest.skip("no strip (binutils)")
    subprocess.run(["strip", str(stripped)], check=True)
    # THEN it counts no .symtab and loads none: its frames stay perf's
    assert symtab_size(str(stripped)) == 0
    assert ElfSymbols.load(str(stripped)) is None


def test_an_address_outside_every_function_names_nothing(library):
    table = ElfSymbols.load(str(library))
    assert table is not None
    try:
        assert table.name_at(0) is None  # the ELF header
        assert table.name_at(10**12) is None  # past the file
    finally:
        table.close()


@pytest.mark.parametrize(
    "content",
    [b"", b"\x7fELF", b"\x7fELF\x01\x01" + b"\0" * 58, b"#!/bin/sh\n" * 20, os.urandom(4096)],
    ids=["empty", "magic-only", "elf32", "script", "noise"],
)
def test_files_that_are_no_elf64_library_give_none(tmp_path, content):
    p = tmp_path / "f.so"
    p.write_bytes(content)
    assert symtab_size(str(p)) is None
    assert ElfSymbols.load(str(p)) is None


def test_a_truncated_library_gives_none_not_an_error(library, tmp_path):
    # GIVEN a library cut where its section headers (at its end) would be
    cut = tmp_path / "libcut.so"
    cut.write_bytes(library.read_bytes()[: library.stat().st_size // 2])
    assert symtab_size(str(cut)) is None
    assert ElfSymbols.load(str(cut)) is None


def test_a_fifo_or_a_directory_is_never_opened_for_reading(tmp_path):
    # GIVEN a path the target could name that is no regular file: a FIFO nobody writes
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = threading.Event()
    result: list[object] = []

    def read() -> None:
        result.append(symtab_size(str(fifo)))
        result.append(ElfSymbols.load(str(fifo)))
        done.set()

    threading.Thread(target=read, daemon=True).start()
    # THEN it returns at once (opening it would block) with nothing
    assert done.wait(5), "blocked on a FIFO"
    assert result == [None, None]
    assert symtab_size(str(tmp_path)) is None
    assert symtab_size(str(tmp_path / "missing.so")) is None


def _strtab(*names: str) -> tuple[np.ndarray, list[int]]:
    raw = b"\0"
    offsets = []
    for n in names:
        offsets.append(len(raw))
        raw += n.encode() + b"\0"
    return np.frombuffer(raw, np.uint8), offsets


@pytest.mark.parametrize(
    ("a", "b", "kept"),
    [
        # (size, binding, name) of two symbols at one address, in table order
        ((0, 1, "a_long_name"), (8, 1, "b"), "b"),  # a size over none
        ((8, 2, "a_long_name"), (8, 0, "b"), "b"),  # not weak over weak (even local)
        ((8, 0, "a_long_name"), (8, 1, "b"), "b"),  # global over local
        ((8, 1, "__a_long_name"), (8, 1, "_b"), "_b"),  # fewer leading underscores
        ((8, 1, "bb"), (8, 1, "a_longer"), "a_longer"),  # the longer name
        ((8, 1, "first"), (8, 1, "other"), "first"),  # else the first in the table
    ],
)
def test_aliases_keep_the_symbol_perf_keeps(a, b, kept):
    strtab, (oa, ob, oc) = _strtab(a[2], b[2], "next")
    keep = _one_per_address(
        np.array([16, 16, 32], dtype=np.uint64),
        np.array([a[0], b[0], 4], dtype=np.uint64),
        np.array([a[1], b[1], 1], dtype=np.uint8),
        np.array([oa, ob, oc], dtype=np.uint32),
        strtab,
    )
    assert keep.tolist() == [kept == a[2], kept == b[2], True]


def test_three_aliases_fold_as_perf_folds_them():
    # GIVEN weak long, global short, global longer at one address: the global longer wins
    strtab, offs = _strtab("weak_longest_of_all", "g", "global_longer", "other")
    keep = _one_per_address(
        np.array([8, 8, 8, 24], dtype=np.uint64),
        np.array([4, 4, 4, 4], dtype=np.uint64),
        np.array([2, 1, 1, 1], dtype=np.uint8),
        np.array(offs, dtype=np.uint32),
        strtab,
    )
    assert keep.tolist() == [False, False, True, True]
