"""Blind batch 13's s12 class on a real process (tests/targets/feed_process.py): a pipeline
of processes in which one parses in plain Python and puts the result on a multiprocessing
queue that a sibling process feeds to a torch model. Judged alone, the parsing process had
no model call and 95% of its CPU stayed unexplained; its queue's GIL hand-over made the
verdict lock/gil. A process that sends work to the service's processes that call the model,
calling none itself, is their feeding stage: its parsing is preprocessing, done by one
thread busy all the time, and the stage's CPU is its own (not the whole pipeline's).
Batch 18's s06 is the same pipeline scored by a NumPy dot no model call can be seen in: a
process that sends work and is saturated while the others wait for it is the stage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, end_session
from tests.e2e.cli import run_cli

pytestmark = pytest.mark.e2e
TARGET = ROOT / "tests" / "targets" / "feed_process.py"


def captured(tmp_path: Path, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pipeline (``args`` after PARSERS SECONDS) captured from its parent: the bundle's
    report and the report of its process with the most preprocessing."""
    proc = subprocess.Popen(
        [sys.executable, str(TARGET), "1", "60", *args],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out = tmp_path / "bundle"
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        res = run_cli("attach", str(proc.pid), "-d", "8", "--format", "json", "-o", str(out))
        assert res.returncode in (0, 5), res.stderr
    finally:
        end_session(proc)  # its stages too
    main = json.loads((out / "report.json").read_text())
    workers = {w["pid"]: w for w in main["service"]["workers"]}
    assert len(workers) >= 2, workers
    # beside a busy neighbour another process can be the busiest, whose capture is the
    # bundle's own
    reports = [main] + [
        json.loads((out / w["report"].replace(".html", ".json")).read_text())
        for w in workers.values()
        if w["report"]
    ]
    return main, max(reports, key=lambda r: r["metrics"]["oncpu_share_preprocess"] or 0.0)


def test_a_process_feeding_a_sibling_model_is_its_preprocessing_stage(tmp_path: Path):
    pytest.importorskip("torch")
    main, report = captured(tmp_path)
    # the parser: no model call of its own, fed to its sibling's model
    m = report["metrics"]
    assert m["model_call_threads"] == 0, m["model_call_site"]
    feeders = report["oncpu"]["structure"]["feeders"]
    assert any("model runs in PID" in f["evidence"] for f in feeders), feeders
    shares = (report["oncpu"]["shares"], report["oncpu"]["top_functions"].get("other", [])[:5])
    assert m["oncpu_share_preprocess"] >= 0.5 > m["oncpu_share_other"], shares
    assert "step (" in str(m["preprocess_top_function"]), m["preprocess_top_function"]
    assert m["stage_cpu_share"] < m["service_cpu_share"], m
    ids = [f["id"] for f in report["findings"]]
    assert "preprocess.serial" in ids, ids
    verdict = main["service"]["verdict"]
    assert (verdict["primary"], verdict["kind"]) == ("preprocess", "serial"), verdict


def test_a_saturated_stage_is_the_pipeline_s_whatever_runs_downstream(tmp_path: Path):
    # GIVEN the same pipeline scored by one NumPy dot per line: no model call to be seen
    # downstream (blind batch 18's s06), the parser saturated and its siblings waiting
    main, report = captured(tmp_path, "24", "numpy")
    feeders = report["oncpu"]["structure"]["feeders"]
    # THEN the parser is the pipeline's stage by the structure alone: it sends and is waited for
    assert any("they wait for it" in f["evidence"] for f in feeders), feeders
    m = report["metrics"]
    assert m["model_call_threads"] == 0, m["model_call_site"]
    assert m["oncpu_share_preprocess"] >= 0.5 > m["oncpu_share_other"], report["oncpu"]["shares"]
    verdict = main["service"]["verdict"]
    assert (verdict["primary"], verdict["kind"]) == ("preprocess", "serial"), verdict
