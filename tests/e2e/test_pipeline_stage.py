"""A multiprocessing pipeline (tests/targets/pipeline_stages.py) whose stages listen on
nothing: its slowest stage is found by the share of the service's CPU it does, not by a
listening socket. Blind batch 9's s12 (a JPEG decode stage doing 96% of its pipeline's CPU)
was read as "memory_bandwidth/allocator 0.30": the rule for a serial stage counted only
services of one process, and the service's other stages were not counted as the service.
The contrast: with two decoders no single stage does most of the work, and the verdict
is not a serial stage."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.e2e.cli import run_cli

pytestmark = pytest.mark.e2e
TARGET = str(ROOT / "tests" / "targets" / "pipeline_stages.py")


def _capture(tmp_path: Path, decoders: int) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, TARGET, str(decoders), "60"], stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    out = tmp_path / f"decoders{decoders}"
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("ready")
        res = run_cli("attach", str(proc.pid), "-d", "5", "--format", "json", "-o", str(out))
        assert res.returncode in (0, 5), res.stderr
    finally:  # the stages too: a killed parent leaves them blocked on their queues
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _fired(report: dict[str, Any]) -> set[str]:
    return {f["id"] for f in report["findings"]}


def test_the_one_decoder_of_a_pipeline_is_its_serial_stage(tmp_path: Path):
    report = _capture(tmp_path, decoders=1)
    m = report["metrics"]
    # the decoder was followed from the parent, and did most of its service's CPU
    assert report["target"].get("followed_from"), report["target"]
    assert m["process_cpu_share"] >= 0.8 * m["service_cpu_share"], m
    assert m["preprocess_top_thread_busy"] >= 0.8, m
    assert "preprocess.serial" in _fired(report), _fired(report)
    verdict = report["service"]["verdict"] if report.get("service") else report["verdict"]
    assert (verdict["primary"], verdict["kind"]) == ("preprocess", "serial"), verdict


def test_two_decoders_are_no_serial_stage(tmp_path: Path):
    report = _capture(tmp_path, decoders=2)
    m = report["metrics"]
    assert m["process_cpu_share"] < 0.8 * m["service_cpu_share"], m
    assert "preprocess.serial" not in _fired(report), _fired(report)
    verdict = report["service"]["verdict"] if report.get("service") else report["verdict"]
    assert verdict["kind"] != "serial", verdict
