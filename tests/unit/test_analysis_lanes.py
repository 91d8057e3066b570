"""Lanes to dependencies (analyse/lanes.py) from hand-built /proc process rows: the requests
outstanding at them, how often all are in use, the clients, and the I/O wait split into time
at the dependency and time queued for a lane."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.analyse import lanes
from tests.unit.analysis import bundle_data, run


def _process(out: list[float | None], clients: list[float | None]) -> pd.DataFrame:
    n = len(out)
    t = [i * 0.05 for i in range(n)]
    return pd.DataFrame({
        "t": t, "utime": t, "stime": [0.0] * n, "rss_bytes": [2**20] * n, "minflt": [0] * n,
        "majflt": [0] * n, "threads": [1] * n, "out_awaiting": out, "clients": clients,
    })  # fmt: skip


def test_one_lane_always_awaited_by_six_clients_is_a_queue():
    # GIVEN one connection awaiting a reply at 9 readings in 10, six clients with traffic
    out = [1.0] * 18 + [0.0] * 2
    m = run(bundle_data(process=_process(out, [6.0] * 20)), lanes.dependency_lanes).metrics
    assert m["dep_lanes"] == 1 and m["dep_lanes_busy"] == pytest.approx(0.9)
    assert m["dep_outstanding_mean"] == pytest.approx(0.9)
    assert m["dep_queue_share"] == pytest.approx(1 - 1 / 6, abs=1e-3)
    # AND with 80% of busy time a loop waiting on I/O, 5/6 of that is the queue
    m["busy_share_io"] = m["busy_share_io_loop"] = 0.8
    lanes.split_io(m)
    assert m["busy_share_dep_queue"] == pytest.approx(0.8 * (1 - 1 / 6), abs=1e-3)
    assert m["busy_share_io_dependency"] == pytest.approx(0.8 / 6, abs=1e-3)


def test_only_a_loops_waits_are_queued():
    # GIVEN the same busy lane, but the I/O wait half a loop's and half a thread's blocked
    # on the dependency alone (a blocking client on the loop)
    out = [1.0] * 18 + [0.0] * 2
    m = run(bundle_data(process=_process(out, [6.0] * 20)), lanes.dependency_lanes).metrics
    m["busy_share_io"], m["busy_share_io_loop"] = 0.8, 0.4
    lanes.split_io(m)
    # THEN only the loop's part is queued; the blocked part is at the dependency
    assert m["busy_share_dep_queue"] == pytest.approx(0.4 * (1 - 1 / 6), abs=1e-3)
    assert m["busy_share_io_dependency"] == pytest.approx(0.8 - 0.4 * 5 / 6, abs=1e-3)
    m["busy_share_io_loop"] = 0.0
    lanes.split_io(m)
    assert m["busy_share_dep_queue"] == 0.0 and m["busy_share_io_dependency"] == 0.8


def test_lanes_mostly_idle_are_not_a_queue():
    out = [4.0] * 2 + [1.0] * 18
    m = run(bundle_data(process=_process(out, [8.0] * 20)), lanes.dependency_lanes).metrics
    assert m["dep_lanes"] == 4 and m["dep_lanes_busy"] == pytest.approx(0.325)
    m["busy_share_io"] = 0.9
    lanes.split_io(m)
    assert m["busy_share_dep_queue"] == 0.0 and m["busy_share_io_dependency"] == 0.9


def test_no_request_outstanding_is_no_lane():
    m = run(bundle_data(process=_process([0.0] * 20, [3.0] * 20)), lanes.dependency_lanes).metrics
    assert m["dep_lanes"] == 0 and m["dep_queue_share"] == 0.0


def test_socket_times_not_read_leave_the_lanes_unmeasured():
    # a bundle from a host (or a version) that did not read them, or too few readings
    none = [None] * 20
    m = run(bundle_data(process=_process(none, none)), lanes.dependency_lanes).metrics
    assert "dep_lanes" not in m
    few = [1.0] * 5 + [None] * 15
    m = run(bundle_data(process=_process(few, few)), lanes.dependency_lanes).metrics
    assert "dep_lanes" not in m
    m = {"busy_share_io": 0.7}
    lanes.split_io(m)
    assert m["busy_share_io_dependency"] == 0.7 and m["busy_share_dep_queue"] == 0.0
