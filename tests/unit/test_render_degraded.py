"""Reports of bundles that lack something: every renderer still works and says what is
missing and why. The bundles are the fixed real bundle with parts taken away, as a capture
would leave them (a collector unavailable or failed, diagnose killed mid-capture)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from diagnose.app.report import diagnose
from diagnose.render.charts import chart_data
from diagnose.render.html import render_html
from diagnose.render.markdown import render_markdown
from diagnose.render.terminal import render_summary
from tests.conftest import FIXTURES
from tests.unit.test_render_html import Page

SOURCE = FIXTURES / "bundles" / "lock_contention"


def set_collector(root: Path, name: str, status: str, reason: str, remove: list[str]) -> None:
    for rel in remove:
        p = root / rel
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    man = json.loads((root / "manifest.json").read_text())
    man["collectors"][name].update(status=status, reason=reason, files=[])
    (root / "manifest.json").write_text(json.dumps(man))


def no_python(root: Path) -> None:
    set_collector(root, "pyspy", "unavailable", "the target is not a Python process", ["python"])
    set_collector(root, "gil", "unavailable", "the target is not a Python process", [])


def no_stacks(root: Path) -> None:
    no_python(root)
    set_collector(root, "perf", "unavailable", "perf is not installed", ["native"])


def no_proc(root: Path) -> None:
    no_python(root)
    set_collector(root, "proc", "failed", "cannot read /proc/PID/task: EACCES", ["proc"])


def no_system(root: Path) -> None:
    set_collector(root, "system", "failed", "system.json: disk full", ["system.json"])


def unfinished(root: Path) -> None:
    man = json.loads((root / "manifest.json").read_text())
    man["state"] = "capturing"
    for key in ("ended", "duration_actual", "ended_by"):
        del man["capture"][key]
    (root / "manifest.json").write_text(json.dumps(man))


CASES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    # case: (how the bundle is cut, what the HTML must say)
    "not python": (no_python, ["the target is not a Python process"]),
    "no stacks": (no_stacks, ["On-CPU not available", "perf is not installed"]),
    "no /proc": (no_proc, ["Not measured: proc failed: cannot read /proc/PID/task: EACCES"]),
    "no system.json": (no_system, ["system failed: system.json: disk full"]),
    "unfinished": (unfinished, ["The capture did not finish"]),
}


@pytest.mark.parametrize("case", CASES)
def test_every_renderer_says_what_is_missing(case, tmp_path):
    # GIVEN the real bundle with a part missing
    cut, says = CASES[case]
    root = tmp_path / "bundle"
    shutil.copytree(SOURCE, root)
    cut(root)
    # WHEN it is diagnosed and rendered
    d = diagnose(root)
    json.dumps(d.report, allow_nan=False)
    html = render_html(d.report, chart_data(d.report))
    markdown = render_markdown(d.report)
    summary = render_summary(d.report, "report.html", width=100)
    # THEN each output is complete and says why something is missing
    text = " ".join(" ".join(Page(html).text).split())
    for phrase in says:
        assert phrase in text, phrase
    assert markdown.startswith("# diagnose: ")
    assert summary.startswith("Verdict: ") and summary.endswith("Report: report.html")
    if case != "unfinished":
        assert "## Not measured" in markdown
        assert "Not measured:" in summary
    else:
        assert "**The capture did not finish**" in markdown
        assert "the capture did not finish" in summary


def test_a_capture_stopped_as_its_window_opened_is_reported(tmp_path):
    # GIVEN a real bundle of a capture interrupted (SIGINT) 1 ms after its window opened:
    # py-spy and perf had recorded nothing, the /proc sampler one tick before the window,
    # so no thread has any time in it
    root = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "bundles" / "interrupted_at_window_open", root)
    man = json.loads((root / "manifest.json").read_text())
    assert man["capture"]["duration_actual"] <= 0.01 and man["capture"]["ended_by"].startswith(
        "interrupted"
    )
    # WHEN it is diagnosed and rendered (this page once failed on a thread with no seconds)
    d = diagnose(root)
    json.dumps(d.report, allow_nan=False)
    html = render_html(d.report, chart_data(d.report))
    markdown = render_markdown(d.report)
    # THEN each thread is listed with 0 s and no shares, and the pages are whole
    assert d.report["threads"], d.report["threads"]
    assert all(t["seconds"] == 0.0 for t in d.report["threads"]), d.report["threads"]
    assert all(v is None for t in d.report["threads"] for v in t["shares"].values())
    assert "n/a" in " ".join(Page(html).text)
    assert markdown.startswith("# diagnose: ")
