"""Thread-time accounting and on-CPU attribution on hand-built /proc and py-spy records."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.analyse import threads as threads_module
from diagnose.analyse.load import BundleData
from diagnose.analyse.pipeline import analyse_data
from diagnose.analyse.threads import futex_waits, thread_time
from tests.unit.analysis import FR, FUTEX, bundle_data, futex_table, ticks


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


# --- native threads' mutex waits -----------------------------------------------------------

HOLDER_STACK = ("main (app.py:1)", "worker (app.py:12)")  # inside `with LOCK:` (line 10)
WAITER_STACK = ("main (app.py:1)", "worker (app.py:10)")  # waiting at `with LOCK:`
MUTEX_STACK = ("start_thread (libc.so.6)", "__lll_lock_wait (libc.so.6)")


def lock_and_mutex(with_perf: bool, unseen: tuple[int, ...] = ()) -> BundleData:
    """One Python thread running 1 s inside `with LOCK:` while three others wait for LOCK
    (futex 0xa), and two native threads blocked on a C mutex (futex 0xb) the whole time;
    ``unseen``: more native threads /proc saw blocked on 0xb, whose waits perf missed."""
    running = [round(0.1 * i, 9) for i in range(11)]
    rows = ticks(1, running, state="R")
    for tid in (2, 3, 4):
        rows += ticks(tid, [0.0] * 11, state="S", syscall=FUTEX, arg0="0xa")
    for tid in (10, 11, *unseen):
        rows += ticks(tid, [0.0] * 11, state="S", syscall=FUTEX, arg0="0xb", comm="pool")
    intervals = [(1, 0.0, 1.05, 1)] + [(tid, 0.0, 1.05, 0) for tid in (2, 3, 4)]
    perf = {}
    if with_perf:
        # perf saw each native thread wait 1 s on 0xb in __lll_lock_wait: a mutex
        waits = [
            {"t": 0.0, "tid": tid, "uaddr": "0xb", "dur": 1.0, "stack_id": 0} for tid in (10, 11)
        ]
        perf = {"sched_futex": futex_table(waits), "sched_stacks": {0: MUTEX_STACK}}
    return bundle_data(rows, intervals, {0: WAITER_STACK, 1: HOLDER_STACK}, **perf)


def test_native_mutex_waits_are_lock_time_before_any_share_is_computed():
    # GIVEN 1 s running, 3 s of Python lock waits (0xa) and 2 s of native mutex waits (0xb)
    # that /proc alone sees as idle futex waits of threads without Python frames
    m = analyse_data(lock_and_mutex(with_perf=True), FR).metrics
    # THEN perf's futex stacks make the 2 s lock time: busy time is 6 s, of which 5 s lock
    assert m["native_lock_wait_share"] == pytest.approx(2 / 6, abs=1e-4)
    assert m["busy_time_s"] == pytest.approx(6.0)
    assert m["busy_share_lock"] == pytest.approx(5 / 6, abs=1e-4)
    # AND the top lock's share is over that same total: 3 s / 6 s. (It was computed before
    # the native waits moved, over 4 s: 0.75, beside a busy_share_lock over 6 s.)
    assert m["lock_top_address"] == "0xa" and m["lock_top_wait_s"] == pytest.approx(3.0)
    assert m["lock_top_share"] == pytest.approx(0.5)
    assert m["lock_top_share"] == pytest.approx(m["lock_top_wait_s"] / m["busy_time_s"], abs=1e-4)


def test_without_perf_the_native_waits_stay_idle_and_the_shares_agree():
    # GIVEN the same threads without perf's futex table WHEN analysed
    m = analyse_data(lock_and_mutex(with_perf=False), FR).metrics
    # THEN the native waits are idle (nothing says they wait for a mutex): busy is 4 s, and
    # both lock shares are over it
    assert m["native_lock_wait_share"] is None
    assert m["busy_share_lock"] == pytest.approx(0.75)
    assert m["lock_top_share"] == pytest.approx(0.75)


def test_the_native_mutex_is_a_hot_spot_of_its_own_with_perf_s_view():
    a = analyse_data(lock_and_mutex(with_perf=True), FR)
    by_address = {h["address"]: h for h in a.locks}
    assert list(by_address) == ["0xa", "0xb"]  # longest wait first
    mutex = by_address["0xb"]
    assert mutex["waiters"] == 2 and mutex["wait_s"] == pytest.approx(2.0)
    assert mutex["perf"]["native_sites"] == [("__lll_lock_wait (libc.so.6)", 2)]
    # the Python lock's holder: thread 1, running inside `with LOCK:` (inferred, no perf
    # wakeups were recorded for 0xa)
    assert by_address["0xa"]["holder"]["site"] == "worker (app.py:12)"
    assert by_address["0xa"]["holder"]["inferred"] is True
    per = a.per_thread.set_index("tid")
    assert per.loc[10, "lock"] == pytest.approx(1.0) and per.loc[10, "idle"] == 0


@pytest.mark.parametrize("chunk_rows", [1, 12, 30])
def test_threads_accounted_a_few_at_a_time_give_the_same_tables(monkeypatch, chunk_rows):
    # GIVEN seven threads (11 ticks each), Python lock waits and native mutex waits perf
    # saw, and a native thread /proc saw on the same mutex whose waits perf missed
    data = lock_and_mutex(with_perf=True, unseen=(12,))
    futex = futex_waits(data, FR)
    whole = thread_time(data, FR, futex)
    # WHEN the /proc rows are accounted in chunks of whole threads (one thread, a few, all)
    monkeypatch.setattr(threads_module, "CHUNK_ROWS", chunk_rows)
    parts = thread_time(data, FR, futex)
    # THEN the intervals, the per-thread sums and the moved mutex time are the same
    assert whole is not None and parts is not None
    pd.testing.assert_frame_equal(whole.intervals, parts.intervals)
    pd.testing.assert_frame_equal(whole.per_thread, parts.per_thread)
    assert parts.native_mutex_s == pytest.approx(whole.native_mutex_s) and whole.native_mutex_s > 0
    assert parts.window == whole.window
    # AND the mutex perf found through threads 10 and 11 is one for thread 12 too, whichever
    # chunk it is accounted in
    per = parts.per_thread.set_index("tid")
    assert per.loc[12, "lock"] == pytest.approx(1.0) and per.loc[12, "idle"] == 0
