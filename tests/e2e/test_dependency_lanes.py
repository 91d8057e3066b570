"""An asyncio service (one thread: the event loop) whose requests each make one round trip
to a dependency over a pool of connections (tests/targets/asyncio_lanes.py). Its loop polls
its clients and the dependency at once, so which one it waits for is told by the kernel's
socket times (collect/tcpinfo.py): a connection that sent more recently than it received
awaits a reply. With one connection for six clients the requests queue inside the process
for it (a lock, issue 39's asyncio.Lock-around-a-round-trip class); with six, each waits on
the dependency alone. Both were read as idle before: the loop polls its clients too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.cli import attach_json

pytestmark = pytest.mark.e2e
TARGET = ROOT / "tests" / "targets" / "asyncio_lanes.py"
CLIENTS = 6


def _capture(tmp_path: Path, lanes: int) -> dict:
    proc = subprocess.Popen(
        [sys.executable, str(TARGET), "60", str(lanes), str(CLIENTS), "40"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("ready")
        return attach_json(proc.pid, tmp_path / f"lanes{lanes}")
    finally:  # its multiprocessing children too: a killed parent leaves them serving
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_requests_queued_for_one_connection_are_a_lock_not_idle(tmp_path: Path):
    report = _capture(tmp_path, lanes=1)
    m = report["metrics"]
    # the one connection awaits a reply most of the time while six clients send
    assert m["dep_lanes"] == 1 and m["dep_lanes_busy"] >= 0.5, m
    assert m["clients_active_mean"] >= 4, m
    # the loop's waits are on the dependency (not its clients), most of them a queue
    assert m["busy_share_io"] > 0.6 and m["busy_share_dep_queue"] > 0.4, m
    v = report["verdict"]
    assert (v["primary"], v["kind"]) == ("lock", "mutex"), v["headline"]
    assert "queue for a connection" in v["headline"]


def test_requests_each_with_a_connection_wait_on_the_dependency(tmp_path: Path):
    report = _capture(tmp_path, lanes=CLIENTS)
    m = report["metrics"]
    # six round trips outstanding at once: no queue in front of them
    assert m["dep_lanes"] >= 4 and m["busy_share_dep_queue"] < 0.15, m
    # the loop counts as busy waiting on it, not as idle waiting for its clients
    assert m["busy_share_io"] > 0.6 and m["busy_threads_mean"] >= 0.5, m
    v = report["verdict"]
    assert (v["primary"], v["kind"]) == ("io", "dependency"), v["headline"]
