"""docs/metrics.md is generated from the metric registry and must be current."""

import subprocess
import sys

from diagnose.analyse.docgen import markdown
from diagnose.analyse.registry import known_metrics
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


def test_the_catalogue_is_complete_whatever_is_imported():
    # GIVEN a fresh interpreter that imports the catalogue alone, and one that imports the
    # whole analysis first WHEN each lists the metrics THEN both list all of them, in order
    names = []
    for imports in ("", "import diagnose.analyse, diagnose.app.report; "):
        res = subprocess.run(
            [
                sys.executable,
                "-c",
                imports + "from diagnose.analyse.registry import known_metrics; "
                "print(' '.join(known_metrics()))",
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        names.append(res.stdout.split())
    assert names[0] == names[1] == list(known_metrics())
    assert len(names[0]) == len(set(names[0])) > 100


def test_every_direction_compare_judges_is_in_the_catalogue():
    directions = {n: d.better for n, d in known_metrics().items() if d.better}
    assert set(directions.values()) == {"higher", "lower"}
    assert directions["busy_share_lock"] == "lower"
    assert directions["busy_share_running"] == "higher"
