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


def windows(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The windows the CPU comparison waits out (each ``time.sleep`` it asks for)."""
    asked: list[float] = []
    real = time.sleep

    def sleep(s: float) -> None:
        asked.append(s)
        real(s)

    monkeypatch.setattr(proctree.time, "sleep", sleep)
    return asked


def stands_out(cores: dict[int, float | None], busy: int, idle: int) -> None:
    """The spinning process used a share of a core, the sleeping one next to nothing: a
    contrast that holds with CPU-heavy neighbours on 2 cores (a spinner among 10 runnable
    tasks still gets 0.2 of a core; the bar is half that)."""
    b, i = cores[busy], cores[idle]
    assert b is not None and i is not None, cores
    assert b > 0.1 and i < 0.02 and b > 5 * i, cores


def test_a_busy_process_stands_out_from_an_idle_one_in_a_short_window(busy_and_idle, monkeypatch):
    if proctree.run_time_s(psutil.Process().pid) is None:
        pytest.skip("this kernel gives no schedstat")
    busy, idle = busy_and_idle
    asked = windows(monkeypatch)
    # WHEN their CPU is compared over the default window
    cores = proctree.cpu_use(busy_and_idle, proctree.CPU_WINDOW_S)
    # THEN it waited the short window (nanoseconds need no more), and the spinner stands out
    assert asked == [proctree.CPU_WINDOW_S] and proctree.CPU_WINDOW_S < proctree.TICK_WINDOW_S
    stands_out(cores, busy, idle)


def test_without_schedstat_clock_ticks_over_the_longer_window(busy_and_idle, monkeypatch):
    busy, idle = busy_and_idle
    monkeypatch.setattr(proctree, "run_time_s", lambda pid: None)
    asked = windows(monkeypatch)
    cores = proctree.cpu_use(busy_and_idle, proctree.CPU_WINDOW_S)
    assert asked == [proctree.TICK_WINDOW_S]  # long enough for 10 ms ticks to count
    stands_out(cores, busy, idle)


def test_a_process_that_is_gone_has_no_run_time():
    assert proctree.run_time_s(2**22 + 12345) is None  # above pid_max: never a process
