"""The disk: the budget (--max-bundle-mb) stops a capture early, a disk too full to start
is refused, and a disk that fills up during a capture ends it cleanly: the manifest is
finished (1 MiB set aside at the start is freed for it), every complete row is kept, the
bundle still gives a report, the exit code is 6 with one line, and the target is left as
it was. Small filesystems are tmpfs mounts made by the test (root); where mounting is not
allowed, those tests skip and say why."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from diagnose.collect.proc_sampler import THREAD_COLUMNS
from tests.conftest import ROOT
from tests.e2e.cli import run_cli
from tests.e2e.safety import settled_health, started, wait_no_helpers
from tests.e2e.test_exit_codes import one_line_error

#: 300 threads sampled at 100 Hz: proc/threads.csv grows by about 2 MB a second
BUSY_TARGET = [
    sys.executable, str(ROOT / "tests" / "targets" / "extreme_load.py"),
    "--idle", "300", "--busy", "1", "--seconds", "300",
]  # fmt: skip
FAST = ("--proc-rate", "100")
MB = 1024 * 1024


@contextlib.contextmanager
def tmpfs(where: Path, size_mb: int) -> Iterator[Path]:
    where.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip() or 'not root'})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(path: Path, nbytes: int) -> None:
    with path.open("wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, nbytes)


def recorded_bytes(bundle: Path) -> int:
    """What the collectors streamed while recording (not converted tables or reports)."""
    files = [*bundle.glob("proc/*.csv"), *bundle.glob("python/*-[0-9][0-9][0-9].*")]
    return sum(f.stat().st_size for f in files)


def assert_rows_whole(bundle: Path) -> None:
    rows = pd.read_csv(bundle / "proc" / "threads.csv", on_bad_lines="error", dtype=str)
    assert list(rows.columns) == THREAD_COLUMNS and len(rows) > 0
    assert rows["t"].notna().all() and rows["state"].notna().all()


def assert_reportable(bundle: Path, tmp_path: Path) -> dict:
    out = tmp_path / "elsewhere.json"
    res = run_cli("report", str(bundle), "--format", "json", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


def test_the_budget_stops_the_capture_and_keeps_the_bundle(tmp_path):
    out = tmp_path / "bundle"
    with started(BUSY_TARGET) as target:
        res = run_cli(
            "attach", str(target.pid), "-d", "30", "-o", str(out), "--max-bundle-mb", "2", *FAST,
            timeout=300,
        )  # fmt: skip
        assert not wait_no_helpers(target.pid, 5)
        assert settled_health(target.pid).ok
    # THEN exit code 6, one line saying why, and a finished bundle with its report
    assert res.returncode == 6, res.stderr
    assert "reached --max-bundle-mb" in one_line_error(res)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["state"] == "complete"
    assert manifest["capture"]["ended_by"] == "disk_budget"
    assert manifest["capture"]["duration_actual"] < 15
    # recording stopped near the budget (checked four times a second; what was streamed
    # in the meantime is the overshoot); conversion and reports come on top of it
    assert recorded_bytes(out) < 2 * 2 * MB
    assert (out / "report.json").is_file()
    assert_rows_whole(out)
    assert assert_reportable(out, tmp_path)["capture"]["ended_by"] == "disk_budget"


def test_a_disk_too_full_to_start_is_refused_and_nothing_is_left(tmp_path):
    with tmpfs(tmp_path / "small", 64) as disk, started(BUSY_TARGET) as target:
        res = run_cli("attach", str(target.pid), "-d", "2", "-o", str(disk / "b"))
        assert settled_health(target.pid).ok
        assert list(disk.iterdir()) == []
    assert res.returncode == 6, res.stderr
    assert "MiB free" in one_line_error(res)
