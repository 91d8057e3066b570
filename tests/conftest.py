"""Shared fixtures. Two tiers: tests/unit (hand-built records, fast) and tests/e2e (real
processes, real py-spy, /proc and perf; marked ``e2e``)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas.errors
import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    # Started as a shell's background job (`.ci/run &`), the tests inherit SIGINT ignored, and
    # so would every diagnose they start: the Ctrl-C tests would test nothing. Run them as
    # from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # pandas' warnings of what its next major version refuses fail the test that meets them
    # (pandas 3 names them; 2.x, which pyproject allows, has no such class)
    if hasattr(pandas.errors, "Pandas4Warning"):
        config.addinivalue_line("filterwarnings", "error::pandas.errors.Pandas4Warning")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


def require_locust() -> None:
    """Skip unless locust is installed, without importing it: importing locust runs gevent's
    monkey.patch_all(), after which every thread of the test process (a capture's
    collectors run in-process in some tests) is a greenlet, and a lock held across a switch
    hangs the whole suite."""
    if importlib.util.find_spec("locust") is None:
        pytest.skip(
            "locust is not installed: pip install -e '.[test]' (.ci/run does)",
            allow_module_level=True,
        )


class Sample:
    """A sample workload running as a child process."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str) -> None:
        self.proc = proc
        self.name = name

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stats(self, timeout: float = 60) -> dict:
        out, _ = self.proc.communicate(timeout=timeout)
        for line in reversed(out.decode().splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError(f"sample {self.name} printed no stats")


def end_session(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a process started with ``start_new_session=True`` and all it started in its
    session, then reap it: killing the leader alone left a pre-fork target's workers
    burning both cores for a minute beside the next tests."""
    alive = proc.poll() is None  # a reaped leader's PID may be another process's now
    for p in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if (p.pid == proc.pid and alive) or (
                p.pid != proc.pid and os.getsid(p.pid) == proc.pid
            ):
                p.kill()
    with contextlib.suppress(Exception):
        proc.communicate(timeout=10)


@contextlib.contextmanager
def run_sample(
    name: str,
    *args: str,
    python: str | None = None,
    seconds: float = 60,
    warmup: float = 1.0,
    env: dict[str, str] | None = None,
) -> Iterator[Sample]:
    """Start samples/NAME.py (self-terminating after ``seconds``); always killed at the end."""
    path = SAMPLES / f"{name}.py"
    proc = subprocess.Popen(
        [python or sys.executable, str(path), "--seconds", str(seconds), *args],
        cwd=str(SAMPLES),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        # a session of its own, as a real service has: the kernel shares CPU between
        # sessions (autogroup), so a sample with 16 busy threads in the test's session
        # would starve the diagnose under test of the CPU it needs to sample
        start_new_session=True,
    )
    try:
        time.sleep(warmup)
        assert proc.poll() is None, f"sample {name} exited early"
        yield Sample(proc, name)
    finally:
        end_session(proc)


@pytest.fixture
def sample():
    return run_sample


def _helper_processes() -> list[psutil.Process]:
    me = psutil.Process()
    out = []
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.name() in ("py-spy", "perf"):
                out.append(child)
    return out


@pytest.fixture(autouse=True)
def no_helper_left_behind():
    """Fail any test that leaves a py-spy or perf process running."""
    yield
    deadline = time.monotonic() + 5
    left = _helper_processes()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"helper processes left running: {[(p.pid, p.name()) for p in left]}"


def pyenv_python(version: str) -> str | None:
    """Path of a pyenv-installed Python X.Y, or None."""
    base = Path.home() / ".pyenv" / "versions"
    for d in sorted(base.glob(f"{version}.*"), reverse=True):
        exe = d / "bin" / f"python{version}"
        if exe.is_file():
            return str(exe)
    return None


def is_root() -> bool:
    return os.geteuid() == 0
