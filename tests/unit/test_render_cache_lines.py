"""The shared-cache-lines section of the HTML and Markdown reports: the line, its offsets,
threads and instructions from a real recording, every target-controlled string escaped."""

from __future__ import annotations

import copy
import importlib.util
import json
from typing import Any

import pytest
from markdown_it import MarkdownIt

from diagnose.app.report import Diagnosis, diagnose
from diagnose.render.charts import chart_data
from diagnose.render.html import render_html
from diagnose.render.markdown import render_markdown
from tests.conftest import FIXTURES
from tests.unit.test_render_html import EVIL, Page

PERF = FIXTURES / "perf"


@pytest.fixture(scope="module")
def diag() -> Diagnosis:
    return diagnose(FIXTURES / "bundles" / "lock_contention")


@pytest.fixture(scope="module")
def table() -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("perf_regenerate", PERF / "regenerate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.golden(PERF / "regs-false-sharing.script.txt")["table"]


def with_lines(diag: Diagnosis, table: dict[str, Any], evil: bool = False) -> dict[str, Any]:
    rep = copy.deepcopy(diag.report)
    t = copy.deepcopy(table)
    if evil:
        for ln in t["lines"]:
            for th in ln["threads"]:
                th["name"] = EVIL
            for f in ln["fields"]:
                for s in f["sites"]:
                    s.update(function=EVIL, library=EVIL + "|x", source=EVIL, text=EVIL)
    rep["extra"]["false_sharing"] = t
    return rep


def test_the_html_section_shows_the_line_offsets_threads_and_instructions(diag, table):
    html = render_html(with_lines(diag, table), chart_data(diag.report))
    (ln,) = table["lines"]
    section = html[html.index('id="cache-lines"') :]
    assert ln["line"] in section and "false sharing" in section
    for f in ln["fields"]:
        assert f">{f['offset']}<" in section
    for th in ln["threads"]:
        assert str(th["tid"]) in section
    assert "lock add qword ptr [r13], 1" in section
    assert "false_sharing_counters.c:77" in section
    assert 'href="#cache-lines"' in html


def test_without_the_collector_the_section_says_how_to_get_it(diag):
    html = render_html(diag.report, chart_data(diag.report))
    section = html[html.index('id="cache-lines"') :]
    assert "Not measured" in section.split("</section>")[0]
    assert "--false-sharing" in section.split("</section>")[0]
    assert "Shared cache lines" not in render_markdown(diag.report)


def test_target_names_in_the_section_never_become_markup(diag, table):
    rep = with_lines(diag, table, evil=True)
    html = render_html(rep, chart_data(diag.report))
    p = Page(html)
    assert [t for t, _ in p.tags].count("script") == 3
    assert "<script>alert" not in html
    assert EVIL in "".join(p.text)
    md = render_markdown(rep)
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]


def test_the_markdown_table_has_one_row_per_field(diag, table):
    md = render_markdown(with_lines(diag, table))
    section = md[md.index("## Shared cache lines") :].split("\n## ")[0]
    (ln,) = table["lines"]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "---" not in r]
    assert len(rows) == 1 + len(ln["fields"])  # the header, then one row per field
    assert ln["line"] in section and "false sharing" in section


def paths(value: Any, path: str = "") -> set[str]:
    """Every field path of a JSON value (``a.b``, ``a[].c``); open maps stop at their key."""
    out = {path} if path else set()
    if isinstance(value, dict) and not path.endswith("outcomes"):
        for k, v in value.items():
            out |= paths(v, f"{path}.{k}".lstrip("."))
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):  # an array of numbers is one documented field
                out |= paths(v, f"{path}[]")
    return out


def test_report_json_documents_every_field_of_the_table(table):
    doc = (FIXTURES.parent.parent / "docs" / "report-json.md").read_text(encoding="utf-8")
    section = doc[doc.index("#### `extra.false_sharing`") :].split("\n#")[0]
    documented = set()
    for line in section.splitlines():
        cells = line.split(" | ")
        if line.startswith("| ") and len(cells) > 2 and cells[1] not in ("type", "---"):
            documented |= {p.strip() for p in cells[0][2:].split(",")}
    documented.discard("field")
    got = paths(json.loads(json.dumps(table)))
    # every documented field exists, and every field is documented, itself or as the
    # container of documented fields
    assert documented - got == set()
    assert {p for p in got - documented if not any(d.startswith(p) for d in documented)} == set()
