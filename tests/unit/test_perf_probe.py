"""The perf capability probe's reasoning, on perf's real messages (recorded on this host,
as root and as an unprivileged user), and perf stat's CSV."""

from __future__ import annotations

from diagnose.collect.perf.probe import MEM_FIX, PERF_INSTALL, PMU_FIX, TRACEFS_FIX, explain, probe
from diagnose.formats.perf_stat import parse_stat

# `setpriv --reuid=65534 perf record -e sched:sched_switch -o x -- true` on this host
NO_TRACEFS = """event syntax error: 'sched:sched_switch'
                     \\___ can't access trace events

Error:\tNo permissions to read /sys/kernel/tracing/events/sched/sched_switch
Hint:\tTry 'sudo mount -o remount,mode=755 /sys/kernel/tracing/'
"""
STAT = """0.71,msec,cpu-clock,714834,100.00,0.007,CPUs utilized
1,,context-switches,714834,100.00,1.404,K/sec
<not supported>,,cycles,0,100.00,,
<not supported>,,instructions,0,100.00,,
"""


def test_explain_names_the_fix():
    assert explain(NO_TRACEFS, "scheduler tracepoints")[1] == TRACEFS_FIX
    assert explain("failed: memory events not supported\n", "c2c")[1] == MEM_FIX
    assert explain("The instructions event is not supported.\n", "hw")[1] == PMU_FIX
    reason, fix = explain("something odd\n", "perf record")
    assert "something odd" in reason and fix


def test_perf_stat_csv():
    rows = {c.event: c for c in parse_stat(STAT)}
    assert rows["cpu-clock"].value == 0.71 and rows["cpu-clock"].unit == "msec"
    assert rows["cycles"].value is None and rows["cycles"].status == "not supported"


def test_probe_without_perf_says_how_to_install_it():
    caps = probe(perf="/nonexistent/perf")
    assert caps.version == ""
    assert not caps.has("cpu_clock")
    assert "perf does not run" in caps.reason("cpu_clock") and PERF_INSTALL in caps.reason(
        "cpu_clock"
    )


def test_ring_buffers_are_bounded_in_total(monkeypatch):
    from diagnose.collect.perf import record

    monkeypatch.setattr(record.os, "cpu_count", lambda: 2)
    assert record.ring_pages(2 * 2**20) == 512  # 2 MiB per CPU on a small host
    monkeypatch.setattr(record.os, "cpu_count", lambda: 256)
    pages = record.ring_pages(2 * 2**20)
    assert pages * 4096 * 256 <= 64 * 2**20 and pages & (pages - 1) == 0  # a power of two
