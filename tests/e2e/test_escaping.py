"""A hostile target (tests/targets/hostile.py) cannot run script, break the layout or send
escape sequences through any report: its thread names, kernel thread names, function and
file names hold HTML, Markdown syntax, ANSI escapes, newlines, bytes that are not UTF-8 and
very long strings. The target is captured for real; the reports are rendered by the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import capture
from tests.conftest import ROOT
from tests.e2e.test_html import chromium, console_errors, flame_labels, js, open_report

TARGET = ROOT / "tests" / "targets" / "hostile.py"
SCRIPT_NAME = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, str]:
    """A 3 s capture of the hostile target, and the terminal summary of `diagnose report`."""
    out = tmp_path_factory.mktemp("hostile") / "bundle"
    proc = subprocess.Popen(
        [sys.executable, str(TARGET), "--seconds", "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        capture(proc.pid, out, CaptureOptions(duration=3))
    finally:
        proc.kill()
        proc.wait()
    res = subprocess.run(
        [sys.executable, "-m", "diagnose", "report", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return out, res.stdout


def test_the_capture_carries_the_hostile_names(hostile):
    # the test means something only if the names reached the bundle
    out, _ = hostile
    report = json.loads((out / "report.json").read_text())
    names = {t["name"] for t in report["threads"]}
    assert SCRIPT_NAME in names
    assert any(n.startswith("L" * 100) for n in names)
    comms = {t["comm"] for t in report["threads"]}
    assert any("\ufffd" in c for c in comms)  # a kernel thread name that was not UTF-8
    assert "<img src=x onerror=" in report["metrics"]["lock_top_site"]
    # and the lock's finding, whose summary names that site, is in the report (first, or behind
    # cpu_contention when CI's neighbours hold the cores during the 3 s capture)
    lock = [f for f in report["findings"] if f["category"] == "lock" and not f["advisory"]]
    assert lock and "<img src=x onerror=" in lock[0]["summary"], report["verdict"]


def test_terminal_summary_has_no_control_characters(hostile):
    _, stdout = hostile
    assert not [c for c in stdout if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]
    assert "\\x1b[2J" in stdout  # shown, not sent
    assert all(len(line) <= 120 for line in stdout.splitlines())


def test_markdown_stays_text(hostile):
    out, _ = hostile
    text = (out / "report.md").read_text()
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    tokens = md.parse(text)
    inline = [c for t in tokens for c in (t.children or [])]
    assert not [t for t in tokens + inline if t.type.startswith("html")]
    assert not [t for t in inline if t.type == "link_open"]
    # every table row keeps its columns, whatever "|" the names hold
    widths: list[int] = []
    for t in tokens:
        if t.type == "tr_open":
            widths.append(0)
        elif t.type in ("th_open", "td_open"):
            widths[-1] += 1
        elif t.type == "table_close":
            assert len(set(widths)) == 1, widths
            widths = []
    rendered = md.render(text)
    assert not re.search(r"<(script|img|svg)\b", rendered)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered  # shown as text


def test_json_keeps_the_data_as_it_was(hostile):
    # the JSON is data, not a display: names are kept intact for whoever reads them
    out, _ = hostile
    report = json.loads((out / "report.json").read_text())
    assert SCRIPT_NAME in {t["name"] for t in report["threads"]}


def test_html_runs_no_script_and_shows_the_names_as_text(hostile):
    out, _ = hostile
    with chromium() as driver:
        open_report(driver, out / "report.html")
        from selenium.common.exceptions import NoAlertPresentException

        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert  # noqa: B018 - raises unless an alert() ran
        assert console_errors(driver) == []
        # no element the target named was created
        assert js(driver, "return document.scripts.length") == 3
        assert js(driver, "return document.querySelectorAll('img, iframe, object').length") == 0
        # the names read as the target wrote them: in tables, the flame graph, the charts
        body = js(driver, "return document.body.textContent")
        assert SCRIPT_NAME in body
        assert "\"'><img src=x onerror=alert(2)>" in body
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select

        # the wall-clock view holds every thread (on CPU, perf may have seen only the one
        # thread that kept the lock); threads side by side
        driver.find_element(By.CSS_SELECTOR, 'input[name="flame-view"][value="wall"]').click()
        Select(driver.find_element(By.ID, "flame-thread")).select_by_index(1)
        labels = flame_labels(driver)
        assert any(lab.startswith(SCRIPT_NAME) for lab in labels), labels
        assert any(lab.startswith('<img src=x onerror="alert(4)">') for lab in labels), labels
        ticks = js(
            driver,
            "return Array.from(document.querySelectorAll('[data-chart=timeline] .ytick text'))"
            ".map(t => t.textContent)",
        )
        assert any(t.startswith(SCRIPT_NAME) for t in ticks), ticks
        options = js(
            driver,
            "return Array.from(document.querySelectorAll('#flame-thread option'))"
            ".map(o => o.textContent)",
        )
        assert any(o.startswith(SCRIPT_NAME) for o in options)
        # a 4000-character name and a 2000-character function do not widen the page
        assert js(driver, "return document.documentElement.scrollWidth <= window.innerWidth")
