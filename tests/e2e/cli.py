"""Running the real ``diagnose`` command line from tests, and waiting on real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

from tests.conftest import ROOT, SAMPLES, end_session


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


def attach_json(pid: int, out: Path, seconds: float = 5) -> dict[str, Any]:
    """``diagnose attach PID -d SECONDS --format json -o OUT`` (which must succeed, with or
    without findings): its report.json, checked to be of ``pid``."""
    res = run_cli("attach", str(pid), "-d", f"{seconds:g}", "--format", "json", "-o", str(out))
    assert res.returncode in (0, 5), res.stderr
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["target"]["pid"] == pid
    return report


def attach_to_target(target: str, mode: str, out: Path) -> dict[str, Any]:
    """Start ``python TARGET MODE 60`` (a test target that prints "ready" once loaded),
    :func:`attach_json` to it into ``out``, and end it."""
    proc = subprocess.Popen(
        [sys.executable, target, mode, "60"], stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("ready")
        return attach_json(proc.pid, out)
    finally:
        end_session(proc)


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
