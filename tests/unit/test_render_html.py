"""The HTML report of the fixed, real bundle: self-contained, policy-locked, escaped."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from html.parser import HTMLParser

import pytest
from markupsafe import escape as html_escape

from diagnose.app.report import Diagnosis, diagnose
from diagnose.render.charts import chart_data
from diagnose.render.html import render_html
from tests.conftest import FIXTURES

EVIL = "<script>alert(1)</script>"


class Page(HTMLParser):
    """Elements, attributes and inline scripts of a page, as a browser's parser sees them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


@pytest.fixture(scope="module")
def diag() -> Diagnosis:
    return diagnose(FIXTURES / "bundles" / "lock_contention")


@pytest.fixture(scope="module")
def page(diag) -> tuple[str, Page]:
    html = render_html(diag.report, chart_data(diag.report))
    return html, Page(html)


def test_only_our_two_scripts_may_run(page):
    html, p = page
    csp = [a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv")]
    assert len(csp) == 1
    policy = dict(d.strip().split(" ", 1) for d in csp[0].split(";"))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'none'"
    types = [a.get("type") for t, a in p.tags if t == "script"]
    assert types == ["application/json", None, None]  # data, plotly.js, report.js
    inline = p.scripts[1:]
    hashes = {
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in inline
    }
    assert set(policy["script-src"].split()) == hashes
    assert "unsafe-inline" not in policy["script-src"] and "unsafe-eval" not in policy["script-src"]
    assert html.count("plotly.js v") == 1  # inlined once


def test_the_page_is_small_and_carries_only_the_plotly_traces_it_draws(page, diag):
    # GIVEN the report of a real capture. The full plotly.js made it 4.9 MB; the build in
    # templates/vendor has the traces the report draws and nothing else
    html, p = page
    assert len(html.encode()) < 1_600_000, len(html.encode())
    plotly = p.scripts[1]
    assert plotly.startswith("/*! plotly.js v")
    charts = json.loads(p.scripts[0])["charts"].values()
    drawn = {t["type"] for c in charts if c.get("figure") for t in c["figure"]["data"]}
    assert drawn == {"scatter", "bar", "heatmap"}  # and the flame graphs' icicle
    for trace in ("icicle", "heatmap", "bar", "scatter"):
        assert f'name:"{trace}"' in plotly, trace  # registered
    for unused in ("scattergl", "choroplethmap", "scatter3d", "sankey", "parcoords"):
        assert f'name:"{unused}"' not in plotly, unused


def test_nothing_is_fetched(page):
    _, p = page
    for tag, attrs in p.tags:
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
        assert "src" not in attrs or (tag == "script" and not attrs["src"]), (tag, attrs)
        href = attrs.get("href")
        if href is not None:
            # in-page anchors; the one outside link is text for the reader to follow
            assert href.startswith("#") or href == "https://www.speedscope.app/", href


def test_chart_data_travels_as_json(page, diag):
    _, p = page
    data = json.loads(p.scripts[0])
    assert set(data["flames"]) == {"cpu", "wall", "waits"}
    for view in ("cpu", "wall", "waits"):
        assert data["flames"][view]["tree"]["nodes"] > 5, view
    for key in ("timeline", "switches", "runq", "cpus"):
        assert data["charts"][key]["figure"]["data"], key


def test_the_verdict_comes_first_then_the_findings(page, diag):
    html, _ = page
    order = [html.index(f'id="{s}"') for s in ("verdict", "findings", "flame", "charts")]
    assert order == sorted(order)
    for f in diag.report["findings"]:
        assert str(html_escape(f["title"])) in html
    assert "npx speedscope" in html


def test_target_text_never_becomes_markup(diag):
    # GIVEN a report whose every target-controlled string is hostile
    rep = copy.deepcopy(diag.report)
    rep["target"]["comm"] = EVIL
    rep["target"]["cmdline"] = [EVIL, "--x=</textarea><svg onload=alert(2)>"]
    rep["verdict"]["headline"] = EVIL
    for f in rep["findings"]:
        f["summary"] = EVIL
        f["fixes"] = [EVIL]
        for e in f["evidence"]:
            e["display"] = EVIL
    for t in rep["threads"]:
        t["name"] = EVIL
    for lock in rep["locks"]:
        lock["site"] = EVIL
        for w in lock["waiter_threads"]:
            w["name"] = EVIL
    charts = chart_data(diag.report)
    charts["flames"]["wall"]["tree"]["label"][1] = EVIL
    # WHEN it is rendered
    html = render_html(rep, charts)
    p = Page(html)
    # THEN no element or script was added, and the text reads as the target wrote it
    assert [t for t, _ in p.tags].count("script") == 3
    assert not [t for t, _ in p.tags if t in ("svg", "textarea", "img")]
    assert "<script>alert" not in html
    assert EVIL in "".join(p.text)
    assert "<" not in p.scripts[0]  # the JSON data cannot end its <script> element
    assert json.loads(p.scripts[0])["flames"]["wall"]["tree"]["label"][1] == EVIL


def test_long_names_are_cut(diag):
    rep = copy.deepcopy(diag.report)
    rep["verdict"]["headline"] = "x" * 100_000
    html = render_html(rep, chart_data(diag.report))
    assert not re.search("x{2000}", html)


@pytest.mark.parametrize(
    ("primary", "confidence", "severity"),
    [
        ("io", 0.96, "high"),
        ("lock", 0.3, "medium"),
        ("idle", 1.0, "info"),
        ("unknown", 0.0, "info"),
    ],
)
def test_a_badge_colour_says_how_much_to_act_not_which_category(
    diag, primary, confidence, severity
):
    # an I/O verdict drew a green badge, which reads as healthy
    report = copy.deepcopy(diag.report)
    report["verdict"].update(primary=primary, confidence=confidence)
    for f in report["findings"]:
        f["advisory"] = True
    html = render_html(report, chart_data(diag.report))
    verdict = re.search(r'<span class="cat-badge cat-(\w+) sev-(\w+)"', html)
    assert verdict is not None and verdict.groups() == (primary, severity)
    # the findings here are all advisory: amber, whatever their category
    found = re.findall(r'<article class="finding cat-\w+ sev-(\w+)', html)
    assert found and set(found) <= {"low", "info"}
    assert "Colours say how much to act" in html
