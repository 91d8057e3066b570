"""Lock rules: several threads blocked on one futex address from one line while one runs
inside is a lock; threads blocked on the interpreter's GIL is GIL contention."""

from tests.unit.rulekit import UNKNOWN, expect, fired, healthy, verdict, when

# measured on samples/lock_contention.py: 8 threads, one MODEL_LOCK, on a busy host
CONTENDED = {
    "busy_threads_mean": 7.4,
    "threads_busy": 8,
    "app_threads_busy": 8,
    "busy_share_running": 0.13,
    "busy_share_runnable": 0.25,
    "busy_share_lock": 0.58,
    "busy_share_gil": 0.03,
    "runq_to_oncpu_ratio": 1.9,
    "host_cpu_util": 1.0,
    "host_other_cpu_share": 0.5,
    "host_foreign_cpu_share": 0.43,
    "host_neighbour_cpu_share": 0.43,  # other sessions on the host: neighbours, not clients
    "process_share_of_cpu_used": 0.49,
    "lock_top_waiters": 8,
    "lock_waiters_max": 7,
    "lock_top_share": 0.58,
    "lock_top_wait_s": 14.8,
    "lock_top_address": "0x556791aad580",
    "lock_top_site": "handle (samples/lock_contention.py:32)",
    "lock_top_holder_site": "predict (samples/lock_contention.py:26)",
}

# measured on samples/gil_contention.py: 6 threads of pure-Python postprocessing
GIL_BOUND = {
    "busy_threads_mean": 5.7,
    "threads_busy": 6,
    "busy_share_running": 0.16,
    "busy_share_runnable": 0.09,
    "busy_share_gil": 0.75,
    "busy_share_lock": 0.0,
    "gil_waiters_mean": 4.6,
    "gil_waiters_max": 5,
    "runq_to_oncpu_ratio": 0.55,
}


def test_threads_queueing_on_one_lock_is_a_lock_verdict():
    m = healthy(**CONTENDED)
    v = expect(m, "lock", "mutex")
    top = v.findings[0]
    assert top.rule.id == "lock.contended"
    assert "8 threads waited 14.8 s" in top.summary
    assert "handle (samples/lock_contention.py:32)" in top.summary
    assert "predict (samples/lock_contention.py:26)" in top.summary


def test_lock_handoffs_on_a_busy_host_are_not_oversubscription():
    # the waiters wake and queue for a core, but none of them is CPU-bound: the run-queue
    # wait is the other processes' doing, a secondary finding, never the verdict
    m = healthy(**CONTENDED)
    assert "scheduling.oversubscription" not in fired(m)
    v = verdict(m)
    assert [r["category"] for r in v.ranking()] == ["lock", "scheduling"]


def test_one_waiter_behind_a_sleeping_holder_is_not_contention():
    m = healthy(**{**CONTENDED, "lock_top_waiters": 1, "lock_waiters_max": 1})
    assert when("lock.contended", m) is False


def test_waiters_that_never_overlap_are_not_a_queue():
    m = healthy(**{**CONTENDED, "lock_top_waiters": 3, "lock_waiters_max": 1})
    assert when("lock.contended", m) is False


def test_a_briefly_contended_lock_is_not_the_bottleneck():
    m = healthy(**{**CONTENDED, "lock_top_share": 0.1, "busy_share_lock": 0.12})
    assert when("lock.contended", m) is False


def test_lock_unknown_without_python_stacks():
    m = healthy(
        **{**CONTENDED, "lock_top_waiters": None, "lock_waiters_max": None, "lock_top_share": None}
    )
    assert when("lock.contended", m) is UNKNOWN


def test_threads_blocked_on_the_gil_is_a_gil_verdict():
    v = expect(healthy(**GIL_BOUND), "lock", "gil")
    assert "blocked on the GIL 75% of their busy time" in v.findings[0].summary


def test_gil_near_misses():
    assert when("lock.gil", healthy(**{**GIL_BOUND, "busy_share_gil": 0.15})) is False
    # a fifth of busy time, but less than half a thread waiting on average
    assert when("lock.gil", healthy(**{**GIL_BOUND, "gil_waiters_mean": 0.3})) is False


def test_gil_waits_shorter_than_the_waits_for_a_core_are_not_the_gil_s():
    # GIVEN uvicorn_workers2_bert (two workers running a BERT encoder on 2 cores, its
    # counterfactual half the layers: 1.97x), 2026-12-03 16:51 capture 1: all the load on one
    # worker, whose 11 threads waited for the GIL 23% of their busy time and for a core 49%
    m = healthy(
        **{
            **GIL_BOUND,
            "busy_threads_mean": 5.2,
            "busy_share_running": 0.2499,
            "busy_share_runnable": 0.4853,
            "busy_share_gil": 0.2284,
            "gil_waiters_mean": 2.17,
            "process_cpu_cores": 1.44,
        }
    )
    # THEN a thread handed the GIL would have waited for a core anyway: not a GIL verdict
    assert when("lock.gil", m) is False
    # near misses: GIL waits as long as the waits for a core are (a GIL-bound process keeps
    # its waiters off the run queue)
    assert when("lock.gil", healthy(**{**m, "busy_share_runnable": 0.2284})) is True
    assert when("lock.gil", healthy(**{**m, "busy_share_runnable": 0.23})) is False


def test_gil_unknown_when_its_address_was_not_found():
    m = healthy(**{**GIL_BOUND, "busy_share_gil": None, "gil_waiters_mean": None})
    assert when("lock.gil", m) is UNKNOWN


# measured on the zoo's mixed_textclean_model_lock (accuracy run of 2026-12-01, capture 2):
# 8 AnyIO threads clean text in plain Python, then score with one NumPy model under a lock;
# the lock's holders waited for the GIL 74% of the time they held it (2-8% on the lock
# samples), because the GEMM releases the GIL and the cleaning threads hold it meanwhile
LOCK_HELD_ACROSS_THE_GIL = {
    "busy_threads_mean": 7.0,
    "threads_busy": 9,
    "app_threads_busy": 9,
    "busy_share_running": 0.14,
    "busy_share_runnable": 0.08,
    "busy_share_lock": 0.58,
    "busy_share_gil": 0.19,
    "gil_waiters_mean": 1.4,
    "gil_waiters_max": 4,
    "runq_to_oncpu_ratio": 0.57,
    "lock_top_waiters": 8,
    "lock_waiters_max": 8,
    "lock_top_share": 0.58,
    "lock_top_wait_s": 35.1,
    "lock_top_address": "0x55baecfaec10",
    "lock_top_site": "score (app.py:34)",
    "lock_top_holder_site": "NumpyModel.__call__ (zoolib/__init__.py:165)",
    "lock_top_holder_gil_wait_share": 0.74,
    "gil_holder_preprocess_share": 0.71,
    "gil_holder_top_site": "fold (zoolib/textwork.py:29)",
    "oncpu_share_preprocess": 0.44,
    "oncpu_share_inference": 0.17,
    "oncpu_share_other": 0.39,
}


def test_a_lock_whose_holder_queues_for_the_gil_is_the_gil_holder_s_cost():
    m = healthy(**LOCK_HELD_ACROSS_THE_GIL)
    # the lock's waits count as GIL waits; what is left of the lock ranks below
    assert m["busy_share_gil_all"] > 0.5 and m["lock_top_share_net"] < 0.2
    assert "lock.contended" in fired(m)
    v = expect(m, "preprocess", "gil")  # the cleaning holds the GIL (CLEAN_MODE=fast: 1.47x)
    assert [f.rule.id for f in v.findings].index("lock.contended") > 0
    # held by anything but preprocessing, the GIL itself is the story
    other = healthy(**{**LOCK_HELD_ACROSS_THE_GIL, "gil_holder_preprocess_share": 0.3})
    expect(other, "lock", "gil")


def test_a_lock_whose_holder_runs_is_the_lock():
    # near miss: the same waits, the holder waiting for the GIL only 5% of its hold time
    m = healthy(**{**LOCK_HELD_ACROSS_THE_GIL, "lock_top_holder_gil_wait_share": 0.05})
    expect(m, "lock", "mutex")
    # not measured (no perf): the lock's share stands whole, as before
    m = healthy(**{**LOCK_HELD_ACROSS_THE_GIL, "lock_top_holder_gil_wait_share": None})
    assert m["lock_top_share_net"] == m["lock_top_share"]
    expect(m, "lock", "mutex")


def test_a_lock_whose_holder_spins_a_native_pool_is_the_pool_s_cost():
    # GIVEN blind batch 6's s02: 8 request threads queue on the lock around a ranker whose
    # holder runs OpenBLAS with its default pool, 61% of the CPU in the pool's wait loops
    spin = {"oncpu_share_spin": 0.61, "spin_share_contended": 0.61, "pool_threads": 1,
            "pool_name": "OpenBLAS", "pool_cpu_share": 0.44, "runq_to_oncpu_ratio": 1.4}  # fmt: skip
    m = healthy(**{**CONTENDED, **spin})
    assert when("lock.contended", m) is False
    expect(m, "scheduling", "oversubscription")
    # near miss: a pool that spins for a third of the CPU leaves the lock the story
    m = healthy(**{**CONTENDED, **spin, "oncpu_share_spin": 0.35, "spin_share_contended": 0.35})
    expect(m, "lock", "mutex")
    # without native stacks the spin is not measured: the lock is still judged
    m = healthy(**{**CONTENDED, **spin, "oncpu_source": "py-spy", "oncpu_share_spin": None})
    assert when("lock.contended", m) is True


def test_a_lock_in_a_native_pool_s_own_data_is_the_pool_s_oversubscription():
    # GIVEN blind batch 14's s04 captured again: 334 request threads waited on a mutex in
    # OpenBLAS's own data (its lock around each threaded GEMM), 63% of their busy time,
    # while the pool spun for 60% of the CPU
    pool_lock = {"lock_top_library": "libscipy_openblas64_-32a4b2a6.so", "lock_top_pool": "OpenBLAS",
                 "lock_top_share": 0.63, "oncpu_share_spin": 0.6, "pool_threads": 120,
                 "pool_name": "OpenBLAS"}  # fmt: skip
    m = healthy(**{**CONTENDED, **pool_lock})
    assert when("lock.contended", m) is False
    v = expect(m, "scheduling", "oversubscription")
    assert v.findings[0].rule.id == "scheduling.pool_lock" and v.findings[0].score == 0.63
    assert "lock in libscipy_openblas64_-32a4b2a6.so's own data" in v.findings[0].summary


def test_near_miss_a_lock_in_a_library_that_is_no_pool_stays_a_lock():
    # a mutex in the C library's data (or the heap: "") is no pool's: the waits are a lock's
    for library in ("libc.so.6", ""):
        m = healthy(**{**CONTENDED, "lock_top_library": library, "lock_top_pool": ""})
        assert when("scheduling.pool_lock", m) is False
        expect(m, "lock", "mutex")
