"""The false_sharing collector's pieces without perf: /proc/PID/maps, reading code from a
live process (this one) and from files, the previous-instruction search on real code, the
rows it keeps (address registers only) and the instructions it looks source lines up for."""

from __future__ import annotations

import ctypes
import json
import os

from diagnose.analyse.false_sharing import load_code
from diagnose.collect.perf import false_sharing as fs
from diagnose.collect.perf.codebytes import CodeReader, find_map, locate, parse_maps, read_maps
from diagnose.formats import x86
from tests.conftest import FIXTURES

MAPS = """\
55d0c6f7b000-55d0c6f7c000 r--p 00000000 08:01 123 /opt/app/fs_counters
55d0c6f7c000-55d0c6f7d000 r-xp 00001000 08:01 123 /opt/app/fs_counters
7f0000000000-7f0000010000 r-xp 00000000 00:00 0
7f0000100000-7f0000200000 r-xp 00020000 08:01 99 /tmp/libjit.so (deleted)
7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]
garbage line
"""


def test_maps_keeps_the_executable_mappings():
    maps = parse_maps(MAPS)
    assert [m.path for m in maps] == [
        "/opt/app/fs_counters", "", "/tmp/libjit.so (deleted)", "[vdso]",
    ]  # fmt: skip
    assert maps[0].offset == 0x1000 and maps[0].file_backed
    assert not maps[1].file_backed and not maps[2].file_backed  # JIT, deleted: no file
    assert find_map(maps, 0x7F0000000010) is maps[1]
    assert find_map(maps, 0x55D0C6F7B010) is None  # not executable


def libc_function(name: str) -> int:
    return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0


def test_code_is_read_from_the_live_process_and_matches_the_file():
    # GIVEN a libc function mapped in this very process
    addr = libc_function("getpid")
    maps = read_maps(os.getpid())
    m = find_map(maps, addr)
    assert m is not None and m.file_backed
    live = CodeReader(os.getpid(), maps)
    gone = CodeReader(2**22 + 12345, maps)  # no such process: the mapped file instead
    try:
        got = live.read(addr, addr + 32)
        from_file = gone.read(addr, addr + 32)
    finally:
        live.close()
        gone.close()
    # THEN the bytes read from memory are the file's, and the source says which
    assert not isinstance(got, str) and not isinstance(from_file, str)
    assert got[1] == "memory" and from_file[1] == "file"
    assert got[0] == from_file[0] and len(got[0]) == 32


def test_the_previous_instruction_of_real_code_from_the_symbol_start():
    # GIVEN IPs inside a real libc function, its start known (as perf's sym+off gives)
    start = libc_function("memchr")
    reader = CodeReader(os.getpid(), read_maps(os.getpid()))
    try:
        got = reader.read(start, start + 64)
        assert not isinstance(got, str)
        boundaries = x86.instruction_starts(got[0], start, start + 48)
        ips = [b for b in boundaries[1:6] if b < start + 48]
        code, failed = locate(reader, [(ip, start) for ip in ips])
    finally:
        reader.close()
    # THEN each one's previous instruction is the boundary before it, found exactly
    assert not failed
    for ip in ips:
        c = code[ip]
        assert c.how == "symbol" and c.prev == boundaries[boundaries.index(ip) - 1]
        prev, at = c.insns()
        assert prev is not None and prev.end == ip and at is not None


def _read_of(name: str) -> fs._Read:
    text = (FIXTURES / "perf" / f"{name}.script.txt").read_text().splitlines()
    return fs._read_samples(text)


def _code_of(name: str) -> dict[int, fs.CodeAt]:
    code, _ = load_code(json.loads((FIXTURES / "perf" / f"{name}.code.json").read_text()))
    return {
        ip: fs.CodeAt(ip, i.start, i.code, i.prev, i.how, "memory", None) for ip, i in code.items()
    }


def test_rows_keep_only_the_address_registers():
    read = _read_of("regs-false-sharing")
    need = {ip: x86.needed_regs(c.insns()) for ip, c in _code_of("regs-false-sharing").items()}
    rows = fs._rows(read, need)
    kept = {
        col
        for row in rows
        for col, v in zip(fs.SAMPLE_COLUMNS, row, strict=True)
        if col in fs.ADDR_REGS and v != ""
    }
    # the slot pointers of `lock add qword ptr [r13], 1` and `lock add qword ptr [r14], rax`
    assert kept == set().union(*need.values()) == {"r13", "r14"}
    assert sum(int(r[2]) for r in rows) == read.n


def test_source_lines_are_looked_up_only_for_shared_writes():
    shared = fs._shared_write_sites(_read_of("regs-false-sharing"), _code_of("regs-false-sharing"))
    assert shared and all(0x5500_0000_0000 < a < 0x5700_0000_0000 for a in shared)
    padded = fs._shared_write_sites(_read_of("regs-padded"), _code_of("regs-padded"))
    assert padded == set()
