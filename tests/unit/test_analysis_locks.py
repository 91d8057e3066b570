"""Locks on hand-built tables: the one inside-the-region rule, inferred and measured holders,
the lock_top_* block, and a native target whose hot spots perf alone finds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.analyse.frames import inside_region
from diagnose.analyse.load import BundleData
from diagnose.analyse.locks import (
    FutexLock,
    _attach_measured,
    covered_within,
    gil_behind_locks,
    gil_wait_in_windows,
    lock_owner,
    merged_intervals,
    perf_locks,
    proc_locks,
    top_lock_metrics,
)
from diagnose.analyse.model import Holder, HolderThread, Hotspot
from diagnose.analyse.pipeline import analyse_data
from diagnose.analyse.threads import thread_states
from tests.unit.analysis import FR, FUTEX, bundle_data, context, futex_table, run, ticks

SITE = "worker (app.py:10)"  # where waiters wait: `with LOCK:`


@pytest.mark.parametrize(
    ("stack", "inside"),
    [
        (("main (app.py:1)", "worker (app.py:12)", "resize (img.py:40)"), True),  # the body
        (("main (app.py:1)", "worker (app.py:10)"), False),  # at the wait line itself
        (("main (app.py:1)", "worker (app.py:8)"), False),  # before it
        (("main (other.py:1)", "worker (other.py:12)"), False),  # same name, other file
        (("main (app.py:1)", "worker (app.py)"), False),  # no line: cannot be placed
        (("main (app.py:1)", "worker2 (app.py:12)"), False),  # another function
    ],
)
def test_inside_the_locked_region(stack, inside):
    assert inside_region(stack, SITE) is inside


def test_a_wait_site_without_a_line_has_no_region():
    # a native site (perf) or a Python frame without its line: nothing is placed inside
    assert not inside_region(("worker (app.py:12)",), "worker (app.py)")
    assert not inside_region(("__lll_lock_wait (libc.so.6)",), "__lll_lock_wait (libc.so.6)")


def python_lock(holder_stack: tuple[str, ...]) -> pd.DataFrame:
    """Thread 1 runs in ``holder_stack`` while threads 2 and 3 wait at SITE on 0xa."""
    rows = ticks(1, [round(0.1 * i, 9) for i in range(6)], state="R")
    for tid in (2, 3):
        rows += ticks(tid, [0.0] * 6, state="S", syscall=FUTEX, arg0="0xa")
    stacks = {0: ("main (app.py:1)", SITE), 1: holder_stack}
    intervals = [(1, 0.0, 0.55, 1), (2, 0.0, 0.55, 0), (3, 0.0, 0.55, 0)]
    return bundle_data(rows, intervals, stacks)


def test_proc_locks_infers_the_holder_running_inside_the_region():
    ctx = run(python_lock(("main (app.py:1)", "worker (app.py:11)", "resize (img.py:40)")),
              thread_states, proc_locks)  # fmt: skip
    (hot,) = ctx.hotspots
    assert (hot.address, hot.waiters, hot.site) == ("0xa", 2, SITE)
    assert hot.wait_s == pytest.approx(1.0)
    assert hot.holder is not None and not hot.holder.measured
    assert hot.holder.site == "resize (img.py:40)"
    assert [t.tid for t in hot.holder.threads] == [1]
    m = ctx.metrics
    assert m["lock_top_share"] == pytest.approx(1.0 / 1.5, abs=1e-4)  # 1 s of 1.5 s busy
    assert m["lock_top_holder_site"] == "resize (img.py:40)"
    # without perf, the holder source says how it was found
    perf_locks(ctx)
    assert m["lock_top_holder_source"] == "inferred"


def test_a_thread_running_outside_the_region_is_not_the_holder():
    # GIVEN the running thread is in the same function but before the `with` line
    ctx = run(python_lock(("main (app.py:1)", "worker (app.py:9)")), thread_states, proc_locks)
    # THEN no holder is claimed (a guess is not a measurement)
    assert ctx.hotspots[0].holder is None
    assert ctx.metrics["lock_top_holder_site"] == ""
    perf_locks(ctx)
    assert ctx.metrics["lock_top_holder_source"] == ""


def test_no_hot_spot_is_a_measured_absence():
    assert top_lock_metrics([]) == {
        "lock_hotspots": 0, "lock_top_address": "", "lock_top_waiters": 0,
        "lock_top_wait_s": 0.0, "lock_top_share": 0.0, "lock_top_site": "",
        "lock_top_holder_site": "", "lock_top_share_net": 0.0, "lock_waiters_max": 0,
    }  # fmt: skip


# --- a native target: perf finds the hot spots ---------------------------------------------

MUTEX = ("start_thread (libc.so.6)", "__lll_lock_wait (libc.so.6)")
HOLDING = ("start_thread (libc.so.6)", "compute_locked (libfoo.so)")


def native_target(contended: bool):
    """Threads 10 and 11 (no Python) blocked on the mutex 0xb; thread 12 runs and releases
    it. ``contended``: both wait on it; else only thread 10 does."""
    rows = ticks(12, [round(0.1 * i, 9) for i in range(11)], state="R", comm="pool")
    waiters = (10, 11) if contended else (10,)
    for tid in waiters:
        rows += ticks(tid, [0.0] * 11, state="S", syscall=FUTEX, arg0="0xb", comm="pool")
    waits = [
        {"t": 0.0, "tid": 10, "uaddr": "0xb", "dur": 0.4, "stack_id": 0, "waker": 12, "wake_t": 0.4},
        {"t": 0.1, "tid": 11, "uaddr": "0xb", "dur": 0.5, "stack_id": 0, "waker": 12, "wake_t": 0.6},
    ][: len(waiters)]  # fmt: skip
    samples = pd.DataFrame({"t": [0.2, 0.3, 0.5], "tid": [12, 12, 12], "stack_id": [1, 1, 1]})
    return bundle_data(
        rows,
        is_python=False,
        missing={"pyspy": "pyspy unavailable: not a Python process"},
        sched_futex=futex_table(waits),
        sched_stacks={0: MUTEX},
        native_samples=samples,
        native_stacks={1: HOLDING},
    )


def test_a_native_target_s_contended_mutex_is_found_by_perf_with_its_measured_holder():
    a = analyse_data(native_target(contended=True), FR)
    m = a.metrics
    assert m["lock_hotspots"] == 1 and m["lock_top_address"] == "0xb"
    assert m["lock_top_waiters"] == 2 and m["lock_top_wait_s"] == pytest.approx(0.9)
    # busy: 1 s running + 2 s of mutex waits moved from idle to lock
    assert m["lock_top_share"] == pytest.approx(0.9 / 3.0, abs=1e-4)
    assert m["lock_waiters_max"] == 2  # the two waits overlap from 0.1 to 0.4
    assert m["lock_top_site"] == "__lll_lock_wait (libc.so.6)"
    assert m["lock_top_holder_site"] == "compute_locked (libfoo.so)"
    assert m["lock_top_holder_source"] == "measured"
    (hot,) = a.locks
    assert hot["source"] == "perf" and hot["max_concurrent_waiters"] == 2
    assert hot["holder"]["inferred"] is False and hot["holder"]["thread"] == "12"
    assert "holder_inferred" not in hot  # the measured holder is not repeated as inferred
    # no GIL in a native target: how long the holder queued for it is not measured, and the
    # lock's share stands whole
    assert m["lock_top_holder_gil_wait_share"] is None
    assert m["lock_top_share_net"] == m["lock_top_share"]


# --- a holder that queues for the GIL while it holds the lock ----------------------------


def gil_and_lock_waits(holder_gil: list[tuple[float, float]]) -> pd.DataFrame:
    """perf's futex waits: thread 7 holds the lock from 0.0 to 1.0 and from 2.0 to 3.0 (the
    waits of threads 8 and 9 end at its releases); ``holder_gil``: (start, dur) of its GIL
    waits; thread 8 also waits for the GIL outside any hold window."""
    rows = [
        {"t": 0.0, "tid": 8, "uaddr": "0xa", "dur": 1.0, "kind": "lock", "waker": 7, "wake_t": 1.0},
        {"t": 0.2, "tid": 9, "uaddr": "0xa", "dur": 0.8, "kind": "lock", "waker": 7, "wake_t": 1.0},
        {"t": 2.0, "tid": 8, "uaddr": "0xa", "dur": 1.0, "kind": "lock", "waker": 7, "wake_t": 3.0},
        {"t": 5.0, "tid": 8, "uaddr": "0xg", "dur": 0.5, "kind": "gil", "waker": 7, "wake_t": 5.5},
    ] + [
        {"t": t, "tid": 7, "uaddr": "0xg", "dur": d, "kind": "gil", "waker": 8, "wake_t": t + d}
        for t, d in holder_gil
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("holder_gil", "share"),
    [
        ([(0.1, 0.5), (2.5, 1.0)], (0.5 + 0.5) / 2.0),  # the second wait outlasts its window
        ([(1.2, 0.5)], 0.0),  # between the windows: not while holding
        ([], 0.0),  # never waited for the GIL: the lock's cost is its own work
    ],
)
def test_the_holder_s_gil_waits_inside_its_hold_windows(holder_gil, share):
    fx = gil_and_lock_waits(holder_gil)
    lk = fx[fx["kind"] == "lock"]
    # the two waits woken by one release (at 1.0) count that window once
    tids = lk["waker"].astype(int).to_numpy()
    start = np.array([0.0, 0.0, 2.0])  # from the holder's acquisition
    got = gil_wait_in_windows(fx, tids, start, lk["wake_t"].to_numpy())
    assert got == pytest.approx(share, abs=1e-3)


def test_without_gil_waits_the_holder_s_share_is_not_measured():
    fx = gil_and_lock_waits([])
    fx = fx[fx["kind"] == "lock"]  # no futex wait on the GIL at all (not a Python target)
    got = gil_wait_in_windows(fx, np.array([7]), np.array([0.0]), np.array([1.0]))
    assert got is None


@pytest.mark.parametrize(
    ("held_gil", "gil_all"),
    [(0.75, 0.2 + 0.6 * 0.75), (None, 0.2), (0.0, 0.2)],
)
def test_waits_on_a_lock_whose_holder_waits_for_the_gil_are_gil_waits(held_gil, gil_all):
    m = {"busy_share_gil": 0.2, "lock_top_share": 0.6, "lock_top_holder_gil_wait_share": held_gil}
    gil_behind_locks(m)
    assert m["busy_share_gil_all"] == pytest.approx(gil_all, abs=1e-4)
    # no GIL measured (not a Python target's data): nothing to add to
    m = {"busy_share_gil": None, "lock_top_share": 0.6, "lock_top_holder_gil_wait_share": 0.5}
    gil_behind_locks(m)
    assert "busy_share_gil_all" not in m


def test_a_native_target_without_a_contended_mutex_measures_its_absence():
    # GIVEN one thread waiting on the mutex (no lock two threads waited on)
    m = analyse_data(native_target(contended=False), FR).metrics
    # THEN every lock_top metric says "none" as a measurement, not "not measured"
    assert m["lock_hotspots"] == 0
    assert (m["lock_top_address"], m["lock_top_site"], m["lock_top_holder_site"]) == ("", "", "")
    assert (m["lock_top_waiters"], m["lock_top_share"], m["lock_waiters_max"]) == (0, 0.0, 0)


def _covered_by_hand(waits: list[tuple[float, float]], a: float, b: float) -> float:
    """The time inside [a, b] that at least one wait covers, by merging the clipped waits."""
    clipped = sorted((max(s, a), min(e, b)) for s, e in waits if min(e, b) > max(s, a))
    total, reach = 0.0, a
    for s, e in clipped:
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


@given(
    waits=st.lists(
        st.tuples(st.floats(0, 10), st.floats(0, 3)).map(lambda p: (p[0], p[0] + p[1])),
        max_size=8,
    ),
    windows=st.lists(st.tuples(st.floats(-1, 11), st.floats(-1, 4)), min_size=1, max_size=6),
)
def test_time_covered_inside_windows_matches_merging_by_hand(waits, windows):
    # overlapping waits (a sampling artefact) are counted once, not twice
    a = np.array([w[0] for w in windows])
    b = a + np.array([w[1] for w in windows])
    ws = np.array([w[0] for w in waits], dtype=float)
    we = np.array([w[1] for w in waits], dtype=float)
    got = covered_within(merged_intervals(ws, we), a, b)
    want = [_covered_by_hand(waits, x, y) for x, y in zip(a, b, strict=True)]
    assert got == pytest.approx(want, abs=1e-9)


# --- the waiters' site: short waits placed on py-spy's samples across two clocks ---------

PREP = ("main (app.py:1)", "worker (app.py:9)")  # the line before `with LOCK:`
AT_SITE = ("main (app.py:1)", SITE)
RESIZE = ("main (app.py:1)", "worker (app.py:11)", "resize (img.py:40)")


def short_waits_after_the_line_before() -> BundleData:
    """Threads 2 and 3 wait on 0xa. py-spy saw them at PREP until 0.1 s, then at SITE;
    /proc saw them blocked on 0xa throughout (5 of 6 ticks at SITE). perf's waits: three
    short ones in the first 0.1 s (their time takes PREP: the sample before each wait) and
    one at 0.2 s, all ended by thread 1, which py-spy saw releasing at SITE until 0.1 s and
    in ``resize`` (inside the region) after."""
    rows = ticks(1, [round(0.1 * i, 9) for i in range(6)], state="R")
    for tid in (2, 3):
        rows += ticks(tid, [0.0] * 6, state="S", syscall=FUTEX, arg0="0xa")
    stacks = {0: AT_SITE, 1: RESIZE, 2: PREP}
    intervals = [(1, 0.0, 0.1, 0), (1, 0.1, 0.55, 1)]
    intervals += [(t, 0.0, 0.1, 2) for t in (2, 3)] + [(t, 0.1, 0.55, 0) for t in (2, 3)]
    waits = [
        {"t": t0, "tid": tid, "uaddr": "0xa", "dur": d, "waker": 1, "wake_t": t0 + d}
        for tid in (2, 3)
        for t0, d in ((0.0, 0.03), (0.03, 0.03), (0.06, 0.03), (0.2, 0.02))
    ]
    return bundle_data(rows, intervals, stacks, sched_futex=futex_table(waits))


def test_the_waiters_site_is_the_blocked_ticks_site_when_perf_s_waits_saw_it_too():
    # GIVEN most of perf's waits take the stack sampled before them (PREP)
    ctx = run(short_waits_after_the_line_before(), thread_states, proc_locks)
    assert ctx.hotspots[0].site == SITE  # /proc's blocked time, weighted by time
    perf_locks(ctx)
    m = ctx.metrics
    # THEN the futex lock's site is the blocked ticks' one, not the line before it
    assert m["futex_top_site"] == SITE
    # AND the holder is what it ran inside the region, not its release at the `with` line
    # (which the line before would not exclude)
    assert m["futex_top_holder_site"] == "resize (img.py:40)"
    assert m["lock_top_holder_site"] == "resize (img.py:40)"
    assert m["lock_top_holder_source"] == "measured"


def test_without_blocked_ticks_at_its_site_the_waits_own_site_stands():
    # near miss: /proc's site is not among the sites of perf's waits on the address
    data = short_waits_after_the_line_before()
    ctx = run(data, thread_states, proc_locks)
    ctx.hotspots[0].site = "elsewhere (app.py:50)"
    perf_locks(ctx)
    assert ctx.metrics["futex_top_site"] == "worker (app.py:9)"


def _hotspot(holder: Holder | None) -> Hotspot:
    return Hotspot("addr:0x10", "0x10", ["0x10"], 3, [], 1.0, 0.5, "handle (app.py:9)", [], 3,
                   holder)  # fmt: skip


def _measured(site: str) -> FutexLock:
    holder = Holder(site, (HolderThread(7, "w1", 12),), measured=True, evidence=12)
    return FutexLock("0x10", 3, 40, 1.2, 30, "handle (app.py:9)", [], [], [], holder)


def test_a_measured_holder_without_samples_in_its_windows_takes_the_inferred_site():
    # GIVEN perf's releasers of the lock, but no sample inside their hold windows
    inferred = Holder("predict (app.py:20)", (HolderThread(8, "w2", 5),), measured=False,
                      evidence=5)  # fmt: skip
    hot = _hotspot(inferred)
    _attach_measured([hot], [_measured("")])
    # THEN the holder is the measured one (who released it), running the region's site
    assert hot.holder is not None and hot.holder.measured
    assert hot.holder.threads[0].tid == 7 and hot.holder.site == "predict (app.py:20)"
    assert hot.holder_inferred is inferred
    # AND with a site of its own, the measured one stands as it is
    hot = _hotspot(inferred)
    _attach_measured([hot], [_measured("ones (numpy)")])
    assert hot.holder is not None and hot.holder.site == "ones (numpy)"
    # AND with neither, nothing is made up
    hot = _hotspot(None)
    _attach_measured([hot], [_measured("")])
    assert hot.holder is None and hot.perf is not None


SEGMENTS = [
    {"library": "python3.11", "start": "0x5600000000", "end": "0x5600002000"},
    {"library": "libscipy_openblas64_-32a4b2a6.so", "start": "0x7f0000000000", "end": "0x7f0000100000"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("address", "library", "pool"),
    [
        ("0x7f0000000a08", "libscipy_openblas64_-32a4b2a6.so", "OpenBLAS"),  # its static mutex
        ("0x5600001000", "python3.11", ""),  # a library's own, but no pool's
        ("0x7f0000100000", "", ""),  # just past the .bss: the heap's, the application's
    ],
)
def test_a_lock_s_owner_is_the_library_whose_data_holds_it(address, library, pool):
    data = bundle_data(system={"data_segments": SEGMENTS})
    ctx = context(data)
    ctx.metrics["lock_top_address"] = address
    lock_owner(ctx)
    assert (ctx.metrics["lock_top_library"], ctx.metrics["lock_top_pool"]) == (library, pool)


def test_without_the_maps_no_owner_is_claimed():
    ctx = context(bundle_data(system={}))
    ctx.metrics["lock_top_address"] = "0x7f0000000a08"
    lock_owner(ctx)
    # no pool found (the lock stays judged a lock), and the library unmeasured
    assert ctx.metrics["lock_top_pool"] == "" and "lock_top_library" not in ctx.metrics


def stale_samples_before_the_wait() -> BundleData:
    """Threads 2 and 3 are blocked on 0xa at every tick. At the first three ticks py-spy's
    last sample shows them still in LINE_BEFORE and its next (right after the tick) at SITE;
    at the last two it saw them at SITE before and after."""
    line_before = ("main (app.py:1)", "ones (numeric.py:233)")
    rows = ticks(1, [round(0.1 * i, 9) for i in range(6)], state="R")
    intervals = [(1, 0.0, 0.55, 1)]
    for tid in (2, 3):
        rows += ticks(tid, [0.0] * 6, state="S", syscall=FUTEX, arg0="0xa")
        for k in (1, 2, 3):
            intervals += [
                (tid, 0.1 * k - 0.05, 0.1 * k + 0.005, 2),
                (tid, 0.1 * k + 0.005, 0.1 * k + 0.05, 0),
            ]
        intervals += [(tid, 0.35, 0.55, 0)]
    return bundle_data(rows, intervals, {0: AT_SITE, 1: RESIZE, 2: line_before})


def test_a_lock_s_site_is_where_py_spy_saw_its_waiters_again_after_the_tick():
    # GIVEN most blocked ticks fall just after a sample of the line before the wait
    ctx = run(stale_samples_before_the_wait(), thread_states, proc_locks)
    (hot,) = ctx.hotspots
    # THEN the site is the wait's line, which later samples confirm, and its time is all kept
    assert hot.site == SITE
    assert hot.wait_s == pytest.approx(1.0)
    assert ctx.metrics["lock_top_holder_site"] == "resize (img.py:40)"
