"""The CPU window of target selection (diagnose/collect/proctree.py): which of a service's
processes work, over 0.12 s, by their threads' nanoseconds on a CPU (``schedstat``); by clock
ticks over a window long enough for them where the kernel gives no nanoseconds."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from diagnose.collect import proctree

SPIN = "import time\nwhile True: pass"
SLEEP = "import time; time.sleep(60)"


@pytest.fixture
def busy_and_idle() -> Iterator[dict[int, psutil.Process]]:
    procs = [subprocess.Popen([sys.executable, "-c", code]) for code in (SPIN, SLEEP)]
    try:
        time.sleep(0.3)  # both started (the interpreter's own start-up is CPU too)
        yield {p.pid: psutil.Process(p.pid) for p in procs}
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_busy_process_stands_out_from_an_idle_one_in_a_short_window(busy_and_idle):
    if proctree.run_time_s(psutil.Process().pid) is None:
        pytest.skip("this kernel gives no schedstat")
    busy, idle = busy_and_idle
    # WHEN their CPU is compared over the default window
    t = time.monotonic()
    cores = proctree.cpu_use(busy_and_idle, proctree.CPU_WINDOW_S)
    waited = time.monotonic() - t
    # THEN the spinning one used most of a core, the sleeping one next to nothing (a contrast
    # that holds with a CPU-heavy neighbour on 2 cores: the spinner keeps a third of a core)
    assert cores[busy] is not None and cores[idle] is not None
    assert cores[busy] > 0.3 and cores[idle] < 0.05, cores
    assert waited < proctree.TICK_WINDOW_S  # the short window, not the ticks' one


def test_without_schedstat_clock_ticks_over_the_longer_window(busy_and_idle, monkeypatch):
    busy, idle = busy_and_idle
    monkeypatch.setattr(proctree, "run_time_s", lambda pid: None)
    t = time.monotonic()
    cores = proctree.cpu_use(busy_and_idle, proctree.CPU_WINDOW_S)
    assert time.monotonic() - t >= proctree.TICK_WINDOW_S
    assert cores[busy] is not None and cores[busy] > 0.3, cores
    assert cores[idle] == pytest.approx(0.0, abs=0.05), cores


def test_a_process_that_is_gone_has_no_run_time():
    assert proctree.run_time_s(2**22 + 12345) is None  # above pid_max: never a process
