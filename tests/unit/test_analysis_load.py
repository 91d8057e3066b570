"""Loading a bundle's tables for the analysis (analyse/load.py), on small files written into
a copy of the fixture bundle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnose.analyse.load import load
from diagnose.analyse.sched import perf_scheduling
from diagnose.bundle.reader import Bundle
from tests.conftest import FIXTURES
from tests.unit.analysis import run

OFFCPU = """t,tid,cpu,state,dur,cpu_in,runq,waker,stack_id
0.00,7,0,S,0.010,0,0.001,8,0
0.10,7,0,S,0.200,1,,,0
0.40,7,0,R,0.002,0,0.002,,0
0.50,8,1,S,0.300,1,,,1
0.90,8,1,S,,,,,1
"""


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    dst = tmp_path / "b"
    shutil.copytree(FIXTURES / "bundles" / "lock_contention", dst)
    return dst


def test_off_cpu_periods_without_a_seen_wakeup_are_kept(bundle):
    # GIVEN perf's switch-outs, three of them woken by something perf did not see (no
    # run-queue delay: a timer, another process) and one still off-CPU when perf stopped
    (bundle / "sched" / "offcpu.csv").write_text(OFFCPU)
    data = load(Bundle.open(bundle))
    # WHEN loaded THEN every switch-out is there (they were dropped for their empty runq)
    assert data.sched_offcpu is not None and len(data.sched_offcpu) == 5
    m = run(data, perf_scheduling).metrics
    # AND they count: 4 voluntary switches and 1 preemption over 0.9 s, the period that
    # came back on another CPU (0.10 s, woken unseen) is a migration, and the run-queue
    # delays are the 2 that were seen
    assert m["sched_switches_voluntary_per_s"] == pytest.approx(round(4 / 0.9, 1))
    assert m["sched_switches_involuntary_per_s"] == pytest.approx(round(1 / 0.9, 1))
    assert m["sched_migrations_per_s"] == pytest.approx(round(1 / 0.9, 2))
    assert m["sched_runq_events"] == 2
    # the blocked time by stack holds the unseen wakeups' 0.5 s too (0.51 s in all)
    tops = run(data, perf_scheduling).out.extra["perf"]["sched"]["offcpu_top_stacks"]
    assert sum(s["seconds"] for s in tops) == pytest.approx(0.51)


def test_a_perf_table_without_a_column_it_needs_is_missing_with_the_reason(bundle):
    text = OFFCPU.replace(",runq", ",delay")
    (bundle / "sched" / "offcpu.csv").write_text(text)
    data = load(Bundle.open(bundle))
    assert data.sched_offcpu is None
    assert data.missing["perf_sched"] == "sched/offcpu.csv lacks column(s) runq"


def test_the_fixture_loads_every_table_and_records_its_machine():
    data = load(Bundle.open(FIXTURES / "bundles" / "lock_contention"))
    for table in ("threads", "process", "cpus", "py_intervals", "native_samples",
                  "sched_offcpu", "sched_futex"):  # fmt: skip
        assert getattr(data, table) is not None, table
    assert data.machine == "x86_64"
    assert data.gil_range == (0x7F41EA34E540, 0x7F41EA377060)
    assert data.c2c is None and data.perf_stat is None
    assert data.missing["c2c"].startswith("c2c unavailable: perf c2c memory sampling")
