"""I/O and idle: a process that mostly waits on sockets or disk is io; one that is not
busy is idle, and diagnose names no bottleneck for it."""

import pytest

from tests.unit.rulekit import UNKNOWN, expect, fired, healthy, verdict, when

# measured on samples/io_wait.py: 6 threads waiting on a 20 ms dependency
WAITING = {
    "busy_threads_mean": 6.0,
    "threads_busy": 6,
    "busy_share_running": 0.004,
    "busy_share_runnable": 0.005,
    "busy_share_io": 0.99,
    "busy_share_lock": 0.0,
    "busy_share_gil": 0.0,
    "process_cpu_cores": 0.03,
    "process_cpu_share": 0.015,
    "runq_to_oncpu_ratio": 1.2,
}


def test_healthy_busy_process_fires_nothing():
    assert fired(healthy()) == set()
    v = verdict(healthy())
    assert v.primary == "unknown" and v.confidence == 0.0


def test_waiting_on_a_dependency_is_io():
    expect(healthy(**WAITING), "io", "dependency")


def test_some_io_is_not_an_io_bottleneck():
    assert when("io.waits_on_dependencies", healthy(busy_share_io=0.3)) is False


def test_not_busy_is_idle_whatever_else():
    m = healthy(busy_threads_mean=0.1, process_cpu_cores=0.01, idle_share=0.99)
    assert fired(m) == {"idle.not_busy"}
    v = verdict(m)
    assert v.primary == "idle" and v.kind is None
    assert v.confidence == 0.8  # 1 - 0.1 * 2


def test_a_quarter_thread_busy_is_not_idle():
    assert when("idle.not_busy", healthy(busy_threads_mean=0.3)) is False


def test_without_thread_states_nothing_is_judged():
    m = healthy(busy_threads_mean=None)
    assert when("idle.not_busy", m) is UNKNOWN
    assert when("io.waits_on_dependencies", {**m, **WAITING, "busy_threads_mean": None}) is UNKNOWN
    v = verdict(m)
    assert v.primary == "unknown"
    assert "could not be evaluated for lack of data" in v.headline


# measured on tests/targets/asyncio_lanes.py: one event loop, six clients, a pool of one
# connection to a 20 ms dependency (its loop's waits on the dependency read as I/O)
ONE_LANE = {
    **WAITING,
    "busy_threads_mean": 0.9,
    "threads_busy": 1,
    "busy_share_io": 0.89,
    "busy_share_io_loop": 0.89,
    "dep_lanes": 1,
    "dep_lanes_busy": 0.93,
    "clients_active_mean": 6.0,
    "dep_outstanding_mean": 0.93,
    "dep_queue_share": 0.833,
}


def test_requests_queued_for_the_only_connection_are_a_lock_not_io():
    v = expect(healthy(**ONE_LANE), "lock", "mutex")
    assert v.findings[0].rule.id == "lock.dependency_lanes"
    # the io finding stands, scored by the part at the dependency alone
    io = next(f for f in v.findings if f.rule.id == "io.waits_on_dependencies")
    assert io.score == pytest.approx(0.89 * (1 - 0.833), abs=0.01)


def test_lanes_not_full_leave_the_wait_at_the_dependency():
    # as many lanes as clients, or lanes idle most of the time: no queue in front of them
    expect(healthy(**{**ONE_LANE, "dep_lanes": 6, "dep_queue_share": 0.0}), "io", "dependency")
    expect(healthy(**{**ONE_LANE, "dep_lanes_busy": 0.4}), "io", "dependency")


def test_a_thread_blocked_on_the_dependency_alone_is_io_not_a_queue():
    # a blocking client called on an event loop: the loop waits on the dependency, not in
    # its poll of the clients, so the requests behind it wait on that call
    expect(healthy(**{**ONE_LANE, "busy_share_io_loop": 0.0}), "io", "dependency")


def test_without_socket_times_io_is_judged_as_before():
    m = healthy(**{**WAITING, "dep_lanes_busy": None, "dep_queue_share": None})
    v = expect(m, "io", "dependency")
    assert v.findings[0].score == pytest.approx(0.99)
    # the lanes rule is another measurement of a mutex: no doubt cast on the verdict for it
    assert not any("could not rule out lock" in n for n in v.confidence_notes)
