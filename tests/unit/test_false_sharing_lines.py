"""Grouping written addresses by cache line (diagnose.analyse.false_sharing) on hand-built
samples and code, near misses included; golden recordings are in test_perf_golden.py."""

from __future__ import annotations

from diagnose.analyse.false_sharing import CodeInfo, SampleRow, analyse_lines, load_rows

LINE = 0x5600_0000_3080  # a 64-byte aligned address
IP = 0x1005
#: lock add qword ptr [rax], 1 (at 0x1000) then mov edx, [rip + 0x2e6d] (at the IP): the
#: sample lands after the locked add, as in the false-sharing sample
ATOMIC = CodeInfo(IP, 0x1000, bytes.fromhex("f0488300018b156d2e0000"), 0x1000, "symbol",
                  "worker", 0x18 + 5, "/opt/fs_counters", {0x1000: "fs_counters.c:52"})  # fmt: skip
#: mov rdx, qword ptr [rax] (a load) then the same rip-relative load
READ = CodeInfo(IP - 2, 0x1000, bytes.fromhex("488b108b156d2e0000"), 0x1000, "symbol",
                "reader", 3, "/opt/r")  # fmt: skip
#: stosq (writes [rdi], then advances rdi) then nop: the base register was overwritten
STOS = CodeInfo(0x1002, 0x1000, bytes.fromhex("48ab90"), 0x1000, "symbol", "fill", 2, "/opt/f")
CODE = {c.ip: c for c in (ATOMIC, READ, STOS)}


def rows(*spec: tuple[int, int, int, int]) -> list[SampleRow]:
    """(tid, ip, samples, address register value)"""
    out = []
    for tid, ip, n, addr in spec:
        reg = "di" if ip == STOS.ip else "ax"
        out.append(SampleRow(tid, ip, n, {reg: addr}))
    return out


def run(*spec, c2c=None):
    return analyse_lines(rows(*spec), CODE, {1: "worker-0", 2: "worker-1"}, c2c)


def test_two_threads_writing_two_offsets_of_one_line_is_false_sharing():
    # GIVEN two threads whose locked adds write offsets 0 and 8 of one line
    m, t = run((1, IP, 100, LINE), (2, IP, 90, LINE + 8))
    # THEN one false-sharing line, both threads, two fields, the instruction and its line
    assert m["false_sharing_lines"] == 1 and m["true_sharing_lines"] == 0
    assert m["false_sharing_top_line"] == hex(LINE)
    assert (m["false_sharing_top_threads"], m["false_sharing_top_offsets"]) == (2, 2)
    assert m["false_sharing_top_share"] == 1.0 and m["false_sharing_share"] == 1.0
    assert m["false_sharing_top_site"] == (
        "lock add qword ptr [rax], 1 in worker+0x18 (fs_counters) at fs_counters.c:52"
    )
    (line,) = t["lines"]
    assert line["kind"] == "false"
    assert [(f["offset"], f["threads"]) for f in line["fields"]] == [(0, [1]), (8, [2])]
    assert [(th["tid"], th["name"], th["offsets"]) for th in line["threads"]] == [
        (1, "worker-0", [0]),
        (2, "worker-1", [8]),
    ]


def test_one_address_written_by_several_threads_is_true_sharing():
    m, t = run((1, IP, 100, LINE + 16), (2, IP, 100, LINE + 16))
    assert m["false_sharing_lines"] == 0 and m["true_sharing_lines"] == 1
    assert m["true_sharing_top_address"] == hex(LINE + 16)
    assert m["true_sharing_top_threads"] == 2
    assert t["lines"][0]["kind"] == "true"


def test_a_shared_struct_of_two_fields_is_true_sharing_only():
    # both threads write both fields (one shared {items, bytes} slot): nothing is false
    m, t = run((1, IP, 50, LINE), (2, IP, 50, LINE), (1, IP, 50, LINE + 8), (2, IP, 50, LINE + 8))
    assert m["false_sharing_lines"] == 0 and m["true_sharing_lines"] == 1
    assert t["lines"][0]["kind"] == "true"


def test_a_shared_word_next_to_private_fields_is_both():
    m, t = run((1, IP, 50, LINE), (2, IP, 50, LINE), (1, IP, 50, LINE + 8), (2, IP, 50, LINE + 16))
    assert m["false_sharing_lines"] == 1 and m["true_sharing_lines"] == 1
    assert t["lines"][0]["kind"] == "false+true"


def test_near_miss_one_thread_at_several_offsets():
    m, t = run((1, IP, 100, LINE), (1, IP, 100, LINE + 8), (1, IP, 100, LINE + 56))
    assert m["false_sharing_lines"] == 0 and m["true_sharing_lines"] == 0 and t["lines"] == []


def test_near_miss_two_threads_on_neighbouring_lines():
    # the padded layout: each thread's counter on its own 64-byte line
    m, _ = run((1, IP, 100, LINE), (2, IP, 100, LINE + 64))
    assert m["false_sharing_lines"] == 0 and m["true_sharing_lines"] == 0


def test_near_miss_two_threads_only_reading_one_line():
    m, t = run((1, READ.ip, 100, LINE), (2, READ.ip, 100, LINE + 8))
    assert m["false_sharing_lines"] == 0 and m["true_sharing_lines"] == 0 and t["lines"] == []
    assert t["outcomes"]["no_write"] == 200
    assert m["false_sharing_coverage"] is None  # no sample wrote memory


def test_near_miss_the_base_register_was_overwritten():
    # GIVEN stosq before the IP: it advanced rdi, so rdi no longer holds the address written
    m, t = run((1, STOS.ip, 100, LINE), (2, STOS.ip, 100, LINE + 8))
    # THEN no address is claimed: no line, and the coverage says so
    assert m["false_sharing_lines"] == 0 and t["lines"] == []
    assert t["outcomes"]["unresolved"] == 200 and m["false_sharing_coverage"] == 0.0


def test_near_miss_a_thread_with_a_stray_sample_is_not_a_writer():
    m, _ = run((1, IP, 200, LINE), (2, IP, 1, LINE + 8))
    assert m["false_sharing_lines"] == 0


def test_the_share_counts_every_sample_of_the_process_kernel_included():
    spec = [SampleRow(1, IP, 30, {"ax": LINE}), SampleRow(2, IP, 30, {"ax": LINE + 8})]
    spec += [SampleRow(1, None, 20), SampleRow(3, 0x9999, 20)]  # kernel; code not kept
    m, t = analyse_lines(spec, CODE)
    assert m["false_sharing_share"] == 0.6
    assert t["samples"] == 100 and t["user_samples"] == 80 and t["outcomes"]["no_code"] == 20


def test_the_c2c_cross_check():
    m, t = run((1, IP, 100, LINE), (2, IP, 100, LINE + 8), c2c=[LINE, 0x7000])
    assert m["false_sharing_c2c_agrees"] == 1 and t["lines"][0]["c2c_contended"] is True
    m, _ = run((1, IP, 100, LINE), (2, IP, 100, LINE + 8), c2c=[0x7000])
    assert m["false_sharing_c2c_agrees"] == 0
    m, _ = run((1, IP, 100, LINE), (2, IP, 100, LINE + 8))
    assert m["false_sharing_c2c_agrees"] is None  # c2c did not run


def test_rows_from_the_bundle_csv():
    got = load_rows(
        [
            {"tid": "7", "ip": "0x1005", "samples": "3", "ax": "0x10", "bx": None},
            {"tid": "7", "ip": "kernel", "samples": "2"},
            {"tid": "x", "ip": "0x1", "samples": "1"},  # damaged: skipped
        ]
    )
    assert got == [SampleRow(7, 0x1005, 3, {"ax": 0x10}), SampleRow(7, None, 2, {})]
