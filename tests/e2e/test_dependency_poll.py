"""A self-loading service whose 8 request threads wait on a dependency it started as a child
(tests/targets/outbound_poll.py): the store listens on a port, the service on nothing, and
its sockets have a timeout, so the threads wait in poll(), not in recv(). Issue 39's first
two failure classes, on a real process: diagnose stays on the PID it was given (its threads
wait on TCP connections: it is a service, not a launcher), and the time those threads wait
is I/O on a dependency, named by peer, not waiting for work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT
from tests.e2e.cli import run_cli, wait_for

pytestmark = pytest.mark.e2e
TARGET = ROOT / "tests" / "targets" / "outbound_poll.py"


def test_threads_polling_a_dependency_they_started_are_io_on_the_pid_given(tmp_path: Path):
    proc = subprocess.Popen(
        [sys.executable, str(TARGET), "60", "200"],  # a slow store: the threads sit in poll()
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        wait_for(lambda: len(psutil.Process(proc.pid).children()) == 1, 10, "the store")
        time.sleep(1)
        out = tmp_path / "bundle"
        res = run_cli("attach", str(proc.pid), "-d", "4", "--format", "json", "-o", str(out))
        assert res.returncode in (0, 5), res.stderr
    finally:  # its multiprocessing children too: a killed parent leaves them serving
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    target = json.loads((out / "manifest.json").read_text())["target"]
    report = json.loads((out / "report.json").read_text())
    m = report["metrics"]
    # stayed: the process given, with the store named as a helper left out
    assert target["pid"] == proc.pid, target
    assert report["verdict"]["primary"] == "io", report["verdict"]
    assert report["verdict"]["kind"] == "dependency"
    # the contrast: the request threads' time is I/O, not waiting for work
    assert m["busy_share_io"] > 0.8, m["busy_share_io"]
    assert (m.get("idle_share_client") or 0.0) < 0.1
    peers = json.loads((out / "system.json").read_text())["outbound"]
    assert peers and peers[0]["connections"] == 8 and peers[0]["threads_waiting"] >= 6, peers
