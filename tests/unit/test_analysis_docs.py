"""docs/metrics.md is generated from the metric registry and must be current."""

import subprocess
import sys

from diagnose.analyse.registry import known_metrics, markdown
from tests.conftest import ROOT


def test_metrics_doc_is_current():
    # GIVEN the committed reference WHEN it is regenerated THEN nothing changes
    committed = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert committed == markdown(), (
        "docs/metrics.md is stale: run `python -m diagnose.analyse.docgen > docs/metrics.md`"
    )


def test_every_metric_is_documented_once():
    text = markdown()
    for name in known_metrics():
        assert text.count(f"| `{name}` |") == 1, name


def test_docgen_runs_as_a_module_without_warnings():
    res = subprocess.run(
        [sys.executable, "-W", "error", "-m", "diagnose.analyse.docgen"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert res.stdout == markdown()
