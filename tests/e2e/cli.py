"""Running the real ``diagnose`` command line from tests, and waiting on real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

from tests.conftest import ROOT, SAMPLES


def diagnose_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "diagnose", *args]


def run_cli(
    *args: str,
    timeout: float = 120,
    cwd: Path | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``diagnose ARGS`` to completion (``prefix``: e.g. setpriv to run it as another user)."""
    return subprocess.run(
        [*prefix, *diagnose_argv(*args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(cwd or ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def flat(text: str) -> str:
    """``text`` with every run of whitespace one space: diagnose wraps its summaries to the
    width, so a phrase may break across lines wherever the figures before it end."""
    return " ".join(text.split())


def sample_argv(name: str, *args: str) -> list[str]:
    return [sys.executable, str(SAMPLES / f"{name}.py"), *args]


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def alive(pids: Sequence[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def kill_all(pids: Sequence[int]) -> None:
    """Clean-up after a failed test: nothing it started may stay."""
    for pid in alive(pids):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            continue
