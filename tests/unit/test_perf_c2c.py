"""perf c2c report --stdio -> contended cache lines, on real outputs from three CPU families.

The fixtures in tests/fixtures/perf/c2c-*.stdio.txt are real reports published elsewhere
(each names its source URL in its header): this project's VMs have no memory sampling.
"""

from __future__ import annotations

import pytest

from diagnose.formats.perf_c2c import C2cFormatError, parse_c2c
from tests.conftest import FIXTURES


def load(name: str):
    return parse_c2c((FIXTURES / "perf" / f"c2c-{name}.stdio.txt").read_text(encoding="utf-8"))


def test_amd_ibs_report_one_falsely_shared_line():
    # GIVEN two counters 8 bytes apart written by two goroutines (perfgo's example)
    rep = load("amd-ibs")
    assert rep.metric == "hitm"
    assert rep.summary["Load Operations"] == 3266 and rep.summary["Load Local HITM"] == 2092
    assert rep.details["Events"] == "ibs_op/ldlat=0/"
    (line,) = rep.lines
    assert line.address == "0x20ea08034080" and line.share == 1.0
    assert (line.hitm, line.hitm_local, line.hitm_remote) == (2096, 2092, 4)
    # THEN the line shows two offsets, the signature of false sharing
    assert line.offsets() == ["0x30", "0x38"]
    a30 = line.accesses[0]
    assert a30.local_pct == pytest.approx(0.4962) and a30.remote_pct == pytest.approx(0.75)
    assert a30.symbol == "github.com/perfgo/perfgo/e" and a30.object == "perfgo.test.linux.amd64"
    assert a30.records == 1552 and a30.cpus == 12 and a30.source == "go.go:0"


def test_intel_hitm_report_two_lines_several_code_addresses():
    rep = load("intel-hitm")
    assert [ln.address for ln in rep.lines] == ["0x55c8971f0080", "0x55c8971f00c0"]
    first = rep.lines[0]
    assert first.share == pytest.approx(0.6614) and first.hitm == 252 and first.stores == 2494
    assert len(first.accesses) == 4 and first.offsets() == ["0x0", "0x20"]
    assert {a.code_address for a in first.accesses} >= {"0x55c8971ed3e9", "0x55c8971ed447"}
    assert rep.lines[1].accesses[0].local_pct == 1.0


def test_arm_spe_peer_report_with_threads():
    # GIVEN Arm SPE (no HITM flag: perf sorts on peer snoops) coalesced by thread
    rep = load("arm-spe-peer-tid")
    assert rep.metric == "peer"
    (line,) = rep.lines
    assert line.hitm == 99 and line.node == "N/A"
    assert {a.tid for a in line.accesses} == {3603, 3606}
    assert {a.thread for a in line.accesses} == {"3603:memstress", "3606:memstress"}
    assert line.offsets() == ["0x20", "0x29"]


def test_not_a_c2c_report():
    with pytest.raises(C2cFormatError):
        parse_c2c("failed: memory events not supported\n")
