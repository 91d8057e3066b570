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

from diagnose.collect.base import CaptureOptions
from diagnose.collect.proc_sampler import THREAD_COLUMNS
from diagnose.collect.session import capture
from tests.conftest import ROOT
from tests.e2e.cli import run_cli, wait_for
from tests.e2e.safety import settled_health, start_attach, started, wait_no_helpers
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
    manifest = json.loads((out / "manifest.json").read_text())
    why = {  # what to read when it is not (a run beside another suite once exited 5)
        "stdout": res.stdout[-2000:], "stderr": res.stderr[-2000:],
        "capture": manifest["capture"], "recorded_bytes": recorded_bytes(out),
        "collectors": {n: (c["status"], c.get("reason")) for n, c in manifest["collectors"].items()},
    }  # fmt: skip
    assert res.returncode == 6, why
    assert "reached --max-bundle-mb" in one_line_error(res)
    assert manifest["state"] == "complete"
    assert manifest["capture"]["ended_by"] == "disk_budget"
    assert manifest["capture"]["duration_actual"] < 15
    # recording stopped near the budget (checked four times a second; what was streamed
    # in the meantime is the overshoot); conversion and reports come on top of it
    assert recorded_bytes(out) < 2 * 2 * MB
    assert not (out / ".reserve").exists()
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


def test_a_disk_that_fills_up_ends_the_capture_cleanly(tmp_path):
    # GIVEN a 4 MB filesystem that the capture itself fills within seconds; diagnose's
    # command line keeps 256 MiB free and would stop first, so this runs the library with
    # that margin off, to reach a write that fails with ENOSPC
    with tmpfs(tmp_path / "tiny", 4) as disk, started(BUSY_TARGET) as target:
        result = capture(
            target.pid,
            disk / "b",
            CaptureOptions(duration=30, proc_rate=100, proc_rate_chosen=True, min_free_bytes=0),
        )
        assert not wait_no_helpers(target.pid, 5)
        assert settled_health(target.pid).ok
        bundle = disk / "b"
        # THEN the capture ended early, and the manifest on disk says how
        manifest = json.loads((bundle / "manifest.json").read_text())
        assert manifest["state"] == "complete"
        assert manifest["capture"]["ended_by"] == "disk_full" == result.manifest.capture.ended_by
        assert manifest["capture"]["duration_actual"] < 25
        proc = manifest["collectors"]["proc"]
        assert proc["status"] == "partial"
        assert "disk full" in proc["reason"] or "No space left" in proc["reason"]
        assert manifest["collectors"]["system"]["status"] == "ok"
        # every row written is whole, and the bundle gives a report (written elsewhere)
        assert_rows_whole(bundle)
        report = assert_reportable(bundle, tmp_path)
        assert report["metrics"]["threads_total"] >= 300


def test_a_disk_filled_by_someone_else_during_a_capture(tmp_path):
    # GIVEN a 400 MB filesystem with 300 MB free; WHEN another process fills it to below
    # the 128 MiB diagnose keeps, during a capture through the command line
    with tmpfs(tmp_path / "shared", 400) as disk, started(BUSY_TARGET) as target:
        fill(disk / "other-1", 100 * MB)
        out = disk / "b"
        proc = start_attach(target.pid, out, 60, *FAST)
        try:
            wait_for(lambda: (out / "proc" / "threads.csv").exists(), 60, "the capture")
            fill(disk / "other-2", 180 * MB)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert not wait_no_helpers(target.pid, 5)
        assert settled_health(target.pid).ok
        # THEN it stops early: exit 6, one line, the finished bundle and its report kept
        assert proc.returncode == 6, err
        assert "the disk filled up" in err and len(err.strip().splitlines()) == 1, err
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["capture"]["ended_by"] == "disk_full"
        assert manifest["state"] == "complete"
        assert (out / "report.json").is_file()
        assert_rows_whole(out)
