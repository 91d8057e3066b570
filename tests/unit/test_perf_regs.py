"""The parser of ``perf script -F tid,time,ip,sym,symoff,dso,uregs`` on hand-built lines
(the golden files in tests/fixtures/perf/regs-*.script.txt cover real recordings)."""

from __future__ import annotations

from diagnose.formats.perf_regs import KERNEL_START, Lost, RegSample, parse_regs_script

REGS = (
    "ABI:2    AX:0x55fcf17a3088    BX:0x7fdd014126c0    CX:0x7fdd01ca0006    DX:0x0    "
    "SI:0x7fdd01412fb0    DI:0x1    BP:0x0    SP:0x7fdd01411ed8    IP:0x55fcf17a024d    "
    "R8:0x0    R9:0x7ffefe0cd397   R10:0x8   R11:0x246   R12:0xffffffffffffff80   R13:0x0   "
    "R14:0x7ffefe0cd2a0   R15:0x7fdd00c12000 "
)


def parse(*lines: str) -> list[RegSample | Lost]:
    return list(parse_regs_script(lines))


def test_a_user_sample_with_its_symbol_offset_library_and_registers():
    (s,) = parse(f"11988   863.033083916:      55fcf17a024d w+0x1d (/tmp/fsx/k) {REGS}")
    assert isinstance(s, RegSample)
    assert (s.tid, s.t, s.ip) == (11988, 863.033083916, 0x55FCF17A024D)
    assert (s.sym, s.symoff, s.dso) == ("w", 0x1D, "/tmp/fsx/k")
    assert s.regs["ax"] == 0x55FCF17A3088 and s.regs["r12"] == 0xFFFFFFFFFFFFFF80
    assert s.regs["ip"] == s.ip and len(s.regs) == 17
    assert not s.kernel


def test_a_kernel_sample_is_marked_and_keeps_the_user_registers_at_entry():
    (s,) = parse(
        f"16977  1036.653142484:  ffffffff8225a696 do_syscall_64+0x46 ([kernel.kallsyms]) {REGS}"
    )
    assert isinstance(s, RegSample) and s.kernel and s.ip >= KERNEL_START
    assert s.dso == "[kernel.kallsyms]" and s.sym == "do_syscall_64"


def test_unknown_symbols_have_no_offset():
    (a, b) = parse(
        f"1 1.000000001:  7f0000001000 [unknown] (/usr/lib/libstripped.so) {REGS}",
        f"1 1.000000002:  7f0000002000 [unknown] ([unknown]) {REGS}",
    )
    assert isinstance(a, RegSample) and isinstance(b, RegSample)
    assert (a.sym, a.symoff, a.dso) == ("", None, "/usr/lib/libstripped.so")
    assert (b.sym, b.symoff, b.dso) == ("", None, "")


def test_cpp_symbols_with_spaces_parentheses_and_plus_signs():
    sym = "std::vector<int, std::allocator<int> >::operator+=(int const&) [clone .isra.0]"
    (s,) = parse(f"7 2.5:  401000 {sym}+0x2a (/opt/app/bin/server (deleted)) {REGS}")
    assert isinstance(s, RegSample)
    assert s.sym == sym and s.symoff == 0x2A
    assert s.dso == "/opt/app/bin/server (deleted)"


def test_a_sample_without_registers():
    (s,) = parse("5 3.25:  7f0000001000 f+0x1 (/lib/x.so) ABI:0")
    assert isinstance(s, RegSample) and s.regs == {}


def test_lost_records_and_lines_of_no_known_shape():
    out = parse(
        "Warning: 3 out of order events",
        "     0     0.000000000: PERF_RECORD_LOST lost 12",
        f"1 1.0:  7f0000001000 f+0x1 (/lib/x.so) {REGS}",
        "1 1.0:  7f00000010",  # cut off at the end of a killed run
        "",
    )
    assert out[0] == Lost(12)
    assert isinstance(out[1], RegSample) and len(out) == 2


def test_a_name_that_imitates_registers_stays_a_name():
    # the library path is the target's: it cannot inject registers into the sample
    (s,) = parse(f"9 1.0:  7f0000001000 f+0x1 (/tmp/ABI:2 AX:0x41 (x)) {REGS}")
    assert isinstance(s, RegSample)
    assert s.regs["ax"] == 0x55FCF17A3088
