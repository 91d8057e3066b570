"""A process that is not Python (`sleep`): the summary and the reports say first that the
verdict rests on the native view alone, and the exit code is 0, as the README's table says
(py-spy cannot apply, which is no failed collector)."""

from __future__ import annotations

import json
import subprocess

from diagnose.errors import MEANINGS, ExitCode
from tests.e2e.cli import run_cli


def test_attach_to_sleep_says_it_is_not_python_first(tmp_path):
    # GIVEN a native process that does nothing
    proc = subprocess.Popen(["sleep", "1000"])
    try:
        out = tmp_path / "b"
        # WHEN diagnose attaches to it
        res = run_cli("attach", str(proc.pid), "-d", "2", "-o", str(out), "--format", "md,json")
    finally:
        proc.kill()
        proc.wait()
    # THEN exit 0, documented as such
    assert res.returncode == ExitCode.OK == 0, res.stdout + res.stderr
    assert "not Python" in MEANINGS[ExitCode.OK]
    # ... and the line after the verdict says what the verdict rests on
    lines = res.stdout.splitlines()
    assert lines[0].startswith("Verdict: "), res.stdout
    assert lines[1].startswith(f"  PID {proc.pid} (sleep) is not a Python process: "), res.stdout
    assert "verdict rests on" in " ".join(lines[1:4])
    # ... as do the reports, at their top
    report = json.loads((out / "report.json").read_text())
    assert report["target"]["is_python"] is False
    md = (out / "report.md").read_text().splitlines()
    assert md[2].startswith("**Native view only:**") and "not a Python process" in md[2]
