"""The Markdown report of a fixed, real bundle (tests/fixtures/bundles/) against its golden file.

The bundle was recorded from samples/lock_contention.py. When a change to the rules, the
analysis or templates/report.md.j2 is meant to change the report, regenerate the golden file
with ``python tests/fixtures/bundles/regenerate.py`` and review its diff.
"""

from __future__ import annotations

import difflib
import importlib.util
import re

from markdown_it import MarkdownIt

from tests.conftest import FIXTURES

_spec = importlib.util.spec_from_file_location("regenerate", FIXTURES / "bundles" / "regenerate.py")
assert _spec and _spec.loader
regenerate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regenerate)


def golden() -> str:
    return regenerate.GOLDEN_MD.read_text(encoding="utf-8")


def rendered() -> str:
    return regenerate.golden_markdown()


def test_markdown_matches_the_golden_file():
    want, got = golden(), rendered()
    diff = "".join(
        difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "rendered", n=1)
    )
    assert got == want, (
        "the Markdown report changed; if that is intended, run "
        "`python tests/fixtures/bundles/regenerate.py` and review the diff:\n" + diff
    )


def test_golden_report_says_what_an_incident_channel_needs():
    text = golden()
    lines = text.splitlines()
    # verdict and confidence first
    assert re.fullmatch(r"# diagnose: Lock contention \(mutex\), confidence \d+%", lines[0])
    # evidence, fixes, lock hot spot, the command that made the capture
    assert "| `lock_top_waiters` | 8 threads |" in text
    assert "**Fixes**" in text
    assert "## Lock hot spots" in text
    assert "**Capture command:** `diagnose attach" in text


def test_golden_report_is_well_formed_markdown():
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(golden())
    assert not [t for t in tokens if t.type.startswith("html")]
    # each table's rows have as many cells as its header
    widths: list[int] = []
    cells = 0
    for t in tokens:
        if t.type == "tr_open":
            cells = 0
        elif t.type in ("th_open", "td_open"):
            cells += 1
        elif t.type == "tr_close":
            widths.append(cells)
        elif t.type == "table_close":
            assert len(set(widths)) == 1, widths
            widths = []
