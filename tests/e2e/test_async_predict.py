"""Issue 39's third failure class on a real process (tests/targets/async_predict.py): FastAPI
on uvicorn, an ``async def predict`` made inside ``create_app`` that cleans the text in
Python, tokenizes it (tokenizers) and runs a transformers BERT built from a config, all on
the event loop, under load from another process (cutting the cleaning: 1.8-2.3x here). The
handler was once taken for the model call and its cleaning counted inside the model. The
model call is the line under which torch runs; the cleaning before it is a serial stage of
the loop's thread. With torch's default pool, its second thread waits in libgomp code perf
cannot name: spin, whose cost is the cores other threads waited for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, end_session
from tests.e2e.cli import run_cli

pytestmark = pytest.mark.e2e
TARGET = ROOT / "tests" / "targets" / "async_predict.py"


def _line(text: str) -> int:
    return next(i for i, s in enumerate(TARGET.read_text().splitlines(), 1) if text in s)


def _capture(tmp_path: Path, torch_threads: str) -> dict[str, Any]:
    pytest.importorskip("transformers")
    server = subprocess.Popen(
        [sys.executable, str(TARGET), "serve"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TORCH_THREADS": torch_threads},
    )
    load = None
    try:
        assert server.stdout is not None
        ready = server.stdout.readline().split()
        assert ready and ready[0] == "ready", ready
        load = subprocess.Popen(
            [sys.executable, str(TARGET), "load", ready[1], "40", "4"],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        time.sleep(3)  # the clients connect, torch warms up
        out = tmp_path / "bundle"
        res = run_cli("attach", str(server.pid), "-d", "6", "--format", "json", "-o", str(out))
        assert res.returncode in (0, 5), res.stderr
    finally:
        if load is not None:
            end_session(load)
        end_session(server)
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _first_after_host_load(report: dict[str, Any]) -> str:
    """The first finding that is not the host's load (diagnose's and the tests' own
    processes share 2 cores with the target)."""
    ids = [f["id"] for f in report["findings"]]
    rest = [i for i in ids if i not in ("scheduling.cpu_contention", "scheduling.load_on_host")]
    return rest[0] if rest else ""


def test_an_async_predict_that_cleans_before_its_model_is_a_serial_stage(tmp_path: Path):
    report = _capture(tmp_path, "1")
    m = report["metrics"]
    # the model call: the handler's line that runs the model, not the handler as a whole
    model_line = _line("out = model(torch.tensor([ids]))")
    assert m["model_call_site"].startswith("create_app.<locals>.predict ("), m["model_call_site"]
    assert m["model_call_site"].endswith(f"async_predict.py:{model_line})"), m["model_call_site"]
    # the cleaning is the loop thread's preprocessing, not time inside the model
    assert m["preprocess_threads"] == 1 and m["preprocess_top_thread_share"] >= 0.9, m
    assert m["preprocess_top_thread_stage_share"] >= 0.35, m["preprocess_top_thread_stage_share"]
    pre = report["oncpu"]["top_stacks"]["preprocess"]
    assert any(f.startswith("clean (") for stack, _ in pre for f in stack), pre
    # the serial stage leads; only the host's load may be said before it, never the model
    assert _first_after_host_load(report) == "preprocess.serial", report["findings"]


def test_torch_s_pool_waiting_in_unnamed_libgomp_code_is_spin(tmp_path: Path):
    report = _capture(tmp_path, "0")
    m = report["metrics"]
    # before: "[unknown] (libgomp.so.1)", unexplained, half of the process's CPU
    assert m["oncpu_share_spin"] >= 0.2, m["oncpu_share_spin"]
    assert m["oncpu_share_other"] < 0.2, m["oncpu_share_other"]
    # its cost: the loop thread's own waits at the pool's barriers, and the pool thread's
    # spin as far as threads waited for a core
    assert m["spin_share_contended"] <= m["oncpu_share_spin"]
    if m["runq_to_oncpu_ratio"] < 0.3:  # a quiet host: the spin takes nothing wanted
        assert _first_after_host_load(report) == "preprocess.serial", report["findings"]
