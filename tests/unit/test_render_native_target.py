"""A process that is not Python is judged from the native view alone: every summary says so
first (issue 41: `attach <sleep>` read "Idle, confidence 100%" with the reason buried under
"Not measured")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from diagnose.app.report import diagnose
from diagnose.render.charts import chart_data
from diagnose.render.html import render_html
from diagnose.render.markdown import render_markdown
from diagnose.render.terminal import render_summary
from diagnose.render.text import native_only
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def python_report() -> dict[str, Any]:
    return diagnose(FIXTURES / "bundles" / "lock_contention").report


def _native(report: dict[str, Any], perf: str = "ok") -> dict[str, Any]:
    """The fixture's report as a native process's would be: no py-spy, perf as given."""
    rep = copy.deepcopy(report)
    rep["target"].update(is_python=False, python_version=None, comm="sleep")
    for name in ("pyspy", "gil"):
        rep["collectors"][name] = {"status": "unavailable", "reason": "not Python", "details": {}}
    rep["collectors"]["perf"] = {"status": perf, "reason": "", "details": {}}
    return rep


def test_the_terminal_says_it_right_under_the_verdict(python_report):
    # GIVEN a report on a process that is not Python WHEN summarised at 80 columns
    lines = render_summary(_native(python_report), width=80).splitlines()
    # THEN the second line says so, before the target line and the findings
    pid = python_report["target"]["pid"]
    assert lines[0].startswith("Verdict: ")
    assert lines[1].startswith(f"  PID {pid} (sleep) is not a Python process: ")
    said = " ".join(ln.strip() for ln in lines[1:4])
    assert "verdict rests on native stacks (perf) and thread states (/proc) alone" in said
    target = next(i for i, ln in enumerate(lines) if ln.startswith("  target PID"))
    assert target > 1


def test_without_perf_it_says_thread_states_alone(python_report):
    text = native_only(_native(python_report, perf="unavailable"))
    assert "rests on thread states (/proc) alone: perf's native stacks were not recorded" in text


def test_the_reports_say_it_at_the_top(python_report):
    rep = _native(python_report)
    md = render_markdown(rep)  # type: ignore[arg-type]
    # the line right after the title, before the target's
    assert md.splitlines()[2].startswith("**Native view only:** PID ")
    assert "is not a Python process" in md.splitlines()[2]
    html = render_html(rep, chart_data(rep))  # type: ignore[arg-type]
    top = html.index('id="native-only"')
    assert top < html.index('class="headline"') and "is not a Python process" in html[top:]


def test_a_python_target_gets_no_such_line(python_report):
    # GIVEN the fixture's own (Python) report, and one from before target.is_python
    old = copy.deepcopy(python_report)
    old["target"].pop("is_python", None)
    for rep in (python_report, old):
        assert native_only(rep) == ""
        assert "not a Python process" not in render_summary(rep, width=80)
        assert "Native view only" not in render_markdown(rep)


def test_the_target_chosen_name_stays_text(python_report):
    # GIVEN a native target whose name is markup (the target chooses its comm)
    rep = _native(python_report)
    rep["target"]["comm"] = "<b>x</b>*y*\x1b[31m"
    html = render_html(rep, chart_data(rep))  # type: ignore[arg-type]
    line = html[html.index('id="native-only"') :].split("</p>", 1)[0]
    assert "&lt;b&gt;x&lt;/b&gt;" in line and "<b>" not in line
    assert "\\*y\\*" in render_markdown(rep).splitlines()[2]  # type: ignore[arg-type]
    assert "\x1b" not in render_summary(rep, width=80)
