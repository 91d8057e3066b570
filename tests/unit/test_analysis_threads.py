"""Thread-time accounting and on-CPU attribution on hand-built /proc and py-spy records."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from diagnose.analyse.frames import frame_rules
from diagnose.analyse.load import BundleData
from diagnose.analyse.pipeline import analyse_data
from diagnose.analyse.threads import thread_time
from diagnose.bundle.manifest import Manifest
from diagnose.bundle.reader import Bundle

FR = frame_rules()
FUTEX = 202
NS = 1_000_000_000


def bundle_data(
    rows: list[dict], intervals: list[tuple] = (), stacks: dict | None = None
) -> BundleData:
    """A BundleData from thread rows (t, tid, state, oncpu, runq seconds, ...) and py-spy
    intervals (tid, start, end, stack_id)."""
    df = pd.DataFrame(rows)
    df["oncpu_ns"] = (df.pop("on") * NS).astype(float)
    df["runq_ns"] = (df.pop("rq") * NS).astype(float)
    df["slices"] = df.get("slices", 1.0)
    for col, default in (("comm", "python"), ("cpu", 0), ("syscall", float("nan")), ("arg0", "")):
        if col not in df:
            df[col] = default
    df["utime"] = df["stime"] = 0.0
    iv = pd.DataFrame(list(intervals), columns=["tid", "start", "end", "stack_id"])
    manifest = Manifest(
        tool_version="test",
        target={"is_python": True},
        host={},
        capture={"rate_hz": 100},
        state="complete",
    )
    return BundleData(
        bundle=Bundle(Path("/nonexistent"), manifest),
        system={"capacity": {"cores_available": 2, "usable_cpus": [0, 1]}},
        threads=df,
        process=None,
        cpus=None,
        py_intervals=iv if len(iv) else None,
        py_stacks=stacks or {},
        py_names={int(t): f"thread-{t}" for t in iv["tid"].unique()} if len(iv) else {},
        gil_folded=None,
        native_samples=None,
        native_stacks={},
        missing={"perf": "perf unavailable: perf is not installed"},
    )


def ticks(tid, cum_on, cum_rq, state="R", step=0.1, **extra):
    return [
        {"t": i * step, "tid": tid, "state": state, "on": on, "rq": rq, **extra}
        for i, (on, rq) in enumerate(zip(cum_on, cum_rq, strict=True))
    ]


def test_counter_lag_keeps_queueing_time_exact_per_thread():
    # GIVEN a thread runnable the whole 0.4 s, whose run-queue wait is only added to the
    # counter when it next runs (the kernel's schedstat lag): 0 s, 0 s, then 0.25 s at once
    rows = ticks(1, [0.0, 0.01, 0.02, 0.03, 0.04], [0.0, 0.0, 0.0, 0.25, 0.36])
    # WHEN its time is accounted
    tt = thread_time(bundle_data(rows), FR)
    per = tt.per_thread.set_index("tid").loc[1]
    # THEN the totals are the counters' (running 0.04, runnable 0.36), nothing is lost to
    # "other", and running + runnable + off-CPU = the window
    assert per["running"] == pytest.approx(0.04)
    assert per["runnable"] == pytest.approx(0.36)
    assert per["other"] == pytest.approx(0.0, abs=1e-9)
    assert per["total"] == pytest.approx(0.4)


def test_off_cpu_time_is_what_the_counters_leave():
    # GIVEN a thread that runs 0.02 s per 0.1 s interval and blocks on a futex the rest
    rows = ticks(1, [0, 0.02, 0.04, 0.06], [0, 0, 0, 0], state="S", syscall=FUTEX, arg0="0x10")
    stacks = {0: ("worker (app.py:10)", "handle (app.py:20)")}
    data = bundle_data(rows, [(1, 0.0, 0.35, 0)], stacks)
    tt = thread_time(data, FR)
    per = tt.per_thread.set_index("tid").loc[1]
    # THEN 0.06 s running and 0.24 s waiting on a lock (a futex wait in application code)
    assert per["running"] == pytest.approx(0.06)
    assert per["lock"] == pytest.approx(0.24)


def test_futex_wait_before_the_first_python_stack_is_not_called_a_lock():
    # GIVEN a Python thread blocked in futex() at ticks before py-spy's first sample
    rows = ticks(1, [0, 0, 0, 0], [0, 0, 0, 0], state="S", syscall=FUTEX, arg0="0x10")
    stacks = {0: ("Condition.wait (/usr/lib/python3.11/threading.py:320)",)}
    data = bundle_data(rows, [(1, 0.15, 0.35, 0)], stacks)
    tt = thread_time(data, FR)
    per = tt.per_thread.set_index("tid").loc[1]
    # THEN the time before the first stack is unclassified, and the rest is idle (waiting
    # for work in Condition.wait), never lock contention
    assert per["lock"] == 0
    assert per["other"] == pytest.approx(0.1)
    assert per["idle"] == pytest.approx(0.2)


def test_cpu_bound_threads_count_threads_that_never_block():
    # GIVEN three threads that want a CPU all the time (running or queued) and one that
    # sleeps most of the time
    rows = []
    for tid in (1, 2, 3):
        rows += ticks(tid, [0, 0.03, 0.06, 0.09], [0, 0.07, 0.14, 0.21])
    rows += ticks(4, [0, 0.01, 0.02, 0.03], [0, 0.0, 0.0, 0.0], state="S", syscall=230)
    a = analyse_data(bundle_data(rows), FR)
    # THEN three CPU-bound threads on 2 cores, waiting 7/3 s per second they run
    assert a.metrics["cpu_bound_threads"] == 3
    assert a.metrics["runq_to_oncpu_ratio"] == pytest.approx(0.63 / 0.30, rel=1e-3)


def test_python_stacks_are_weighted_by_the_cpu_time_of_their_thread():
    # GIVEN one thread on a CPU half of every interval, in tokenize for the first 0.2 s
    # and in the model for the next 0.2 s (py-spy intervals), and a second thread in
    # tokenize the whole time but blocked (no CPU at all)
    rows = ticks(1, [0, 0.05, 0.1, 0.15, 0.2], [0] * 5, state="S", syscall=FUTEX, arg0="0x1")
    rows += ticks(2, [0] * 5, [0] * 5, state="S", syscall=FUTEX, arg0="0x2")
    stacks = {
        0: ("handle (app.py:1)", "tokenize (app.py:9)"),
        1: ("handle (app.py:1)", "predict (app.py:5)"),
    }
    iv = [(1, 0.0, 0.2, 0), (1, 0.2, 0.4, 1), (2, 0.0, 0.4, 0)]
    a = analyse_data(bundle_data(rows, iv, stacks), FR)
    m = a.metrics
    # THEN half the CPU time is preprocessing and half is the model; the blocked thread's
    # stack weighs nothing; 0.2 CPU-seconds at 100 Hz are 20 samples
    assert m["oncpu_source"] == "py-spy"
    assert m["oncpu_share_preprocess"] == pytest.approx(0.5)
    assert m["oncpu_share_model"] == pytest.approx(0.5)
    assert m["oncpu_samples"] == 20
    assert m["preprocess_top_thread_share"] == pytest.approx(1.0)


def test_kernel_categories_are_not_measured_without_native_stacks():
    rows = ticks(1, [0, 0.1, 0.2], [0, 0, 0])
    stacks = {0: ("handle (app.py:1)", "forward (app.py:5)")}
    a = analyse_data(bundle_data(rows, [(1, 0.0, 0.2, 0)], stacks), FR)
    # Python stacks cannot tell a GEMM from a memcpy: null, with perf named as the reason
    for cat in ("compute", "memory", "allocator"):
        assert a.metrics[f"oncpu_share_{cat}"] is None
        assert a.unmeasured[f"oncpu_share_{cat}"] == "perf unavailable: perf is not installed"
    assert a.metrics["oncpu_share_model"] == pytest.approx(1.0)
