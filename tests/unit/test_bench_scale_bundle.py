"""The analysis benchmark's bundle generator: a scaled bundle is the recording, repeated.

Checked on the recorded fixture bundle, through the real loader and analysis: rows grow by
the factors, time runs on, cumulative counters continue, rates stay the recording's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from benchmarks.scale_bundle import TID_STEP, period, scale
from diagnose.analyse import analyse
from diagnose.bundle import Bundle

SRC = Path(__file__).resolve().parent.parent / "fixtures" / "bundles" / "lock_contention"


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scale(SRC, tmp_path_factory.mktemp("scaled") / "b", k=3, m=2)


def test_rows_grow_by_both_factors_and_time_runs_on(scaled: Path) -> None:
    T = period(SRC)
    for rel, col in (("proc/threads.csv", "t"), ("python/intervals.csv", "start"),
                     ("native/samples.csv", "t")):  # fmt: skip
        src, out = pd.read_csv(SRC / rel), pd.read_csv(scaled / rel)
        assert len(out) == 6 * len(src), rel
        assert out[col].max() == pytest.approx(src[col].max() + 2 * T, abs=1e-5), rel
        assert out[col].is_monotonic_increasing, rel
    names = pd.read_csv(scaled / "python/threads.csv")
    tid = int(pd.read_csv(SRC / "python/threads.csv")["tid"].iloc[0])
    assert tid + TID_STEP in set(names["tid"])
    assert any(n.endswith("-c1") for n in names["name"].astype(str))


def test_cumulative_counters_continue_across_copies(scaled: Path) -> None:
    df = pd.read_csv(scaled / "proc/threads.csv")
    for _, g in df.groupby("tid"):
        for col in ("utime", "oncpu_ns", "runq_ns"):
            assert g[col].is_monotonic_increasing, col
        assert g["vcsw"].dropna().is_monotonic_increasing
    cpus = pd.read_csv(scaled / "proc/cpus.csv")
    for _, g in cpus.groupby("cpu"):
        assert g["busy_jiffies"].is_monotonic_increasing


def test_the_analysis_sees_the_recordings_rates_over_a_longer_window(scaled: Path) -> None:
    before = analyse(Bundle.open(SRC)).metrics
    after = analyse(Bundle.open(scaled)).metrics
    assert after["threads_total"] == 2 * before["threads_total"]
    # two more copies of the recording, each one period (its length, to a /proc tick) later
    assert after["window_s"] == pytest.approx(2 * period(SRC) + before["window_s"], abs=0.1)
    # twice the threads, each as busy as in the recording, on the same host's counters
    assert after["busy_threads_mean"] == pytest.approx(2 * before["busy_threads_mean"], rel=0.1)
    # the process's CPU counters (not doubled: the copies are of threads, not processes)
    # continue from copy to copy: three recordings' CPU-seconds over the longer window
    cpu_s = after["process_cpu_cores"] * after["window_s"]
    assert cpu_s == pytest.approx(3 * before["process_cpu_cores"] * before["window_s"], rel=0.05)


def test_the_manifest_says_the_bundle_is_generated(scaled: Path) -> None:
    cap = Bundle.open(scaled).manifest.capture
    assert cap.extra["generated"]["time_factor"] == 3  # an annotation diagnose keeps
    assert cap.extra["generated"]["thread_factor"] == 2
    assert cap.duration_actual == pytest.approx(3 * period(SRC), abs=1e-3)
