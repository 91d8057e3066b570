"""diagnose history (a store's timeline: terminal, JSON, HTML) and diagnose fleet (the pod
that differs), on stores and reports made from the recorded bundle's report.json."""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from diagnose.app.fleet import deviations, fleet, load_pods
from diagnose.cli import main
from diagnose.render.watch import (
    render_fleet_html,
    render_fleet_markdown,
    render_fleet_text,
    render_history_html,
    render_history_text,
)
from diagnose.watch.history import history
from diagnose.watch.store import Store
from tests.unit.watchkit import SOURCE, add_capture, at, healthy_report, lock_report, write_report

EVIL = "<script>alert(1)</script>\x1b]0;PWND\x07 ![x](https://attacker.example/p.png)"


def _store(path: Path, verdicts: list[str], evil: bool = False) -> Path:
    """A store whose captures, a minute apart, have these verdicts (lock or healthy)."""
    now = time.time() - 3600
    with Store.create(path) as store:
        prev = None
        for n, v in enumerate(verdicts):
            r = lock_report() if v == "lock" else healthy_report()
            if evil:
                r["verdict"]["headline"] = f"threads wait at {EVIL} (app.py:1)"
                r["target"]["comm"] = EVIL
            add_capture(store, at(r, now + 60 * n), f"4{n}-20260101-00000{n}", v != prev)
            prev = v
    return path


def test_history_json_lists_every_capture_oldest_first_with_bands(tmp_path):
    store = _store(tmp_path / "s", ["healthy", "healthy", "lock", "lock", "healthy"])
    res = CliRunner().invoke(main, ["history", str(store), "--json"])
    assert res.exit_code == 0, res.output
    h = json.loads(res.stdout)
    caps = h["captures"]
    assert [c["category"] for c in caps] == ["compute", "compute", "lock", "lock", "compute"]
    assert [c["started_unix"] for c in caps] == sorted(c["started_unix"] for c in caps)
    assert [c["kept_whole"] for c in caps] == [True, False, True, False, True]
    assert caps[0]["link"] == "captures/40-20260101-000000/report.json"
    assert [(b["category"], b["captures"]) for b in h["bands"]] == [
        ("compute", 2), ("lock", 2), ("compute", 1)]  # fmt: skip
    # the terminal shows one line per band
    text = render_history_text(h)
    assert "lock/mutex" in text and text.count("capture(s)") == 3


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.links: list[str] = []
        self.rects = 0

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.rects += tag == "rect"
        self.links += [str(v) for k, v in attrs if k == "href"]


def test_history_html_draws_bands_links_kept_bundles_and_escapes_the_target(tmp_path):
    # GIVEN a store whose headlines and command name carry markup and escape sequences
    store = _store(tmp_path / "s", ["lock", "healthy", "healthy"], evil=True)
    (store / "captures" / "40-20260101-000000" / "report.html").write_text("page")
    # WHEN its page is written
    res = CliRunner().invoke(main, ["history", str(store), "--html"])
    assert res.exit_code == 0, res.output
    page = (store / "history.html").read_text()
    parsed = _Page()
    parsed.feed(page)
    # THEN two bands, links to what is kept (the page of the bundle kept whole)
    assert parsed.rects == 2
    assert parsed.links == [
        "captures/40-20260101-000000/report.html",
        "captures/41-20260101-000001/report.json",
        "captures/42-20260101-000002/report.json",
    ]
    # AND the target's text is shown, never obeyed
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert "&lt;script&gt;alert(1)" in page and "\x1b" not in page
    # AND the terminal gets no escape sequence
    with Store.open(store) as s:
        assert "\x1b" not in render_history_text(history(s))


def test_history_page_elsewhere_links_back_into_the_store(tmp_path):
    store = _store(tmp_path / "s", ["lock"])
    res = CliRunner().invoke(main, ["history", str(store), "-o", str(tmp_path / "out" / "h.html")])
    assert res.exit_code == 0, res.output
    parsed = _Page()
    parsed.feed((tmp_path / "out" / "h.html").read_text())
    assert parsed.links == ["../s/captures/40-20260101-000000/report.json"]


def test_history_of_something_else_is_exit_7(tmp_path):
    res = CliRunner().invoke(main, ["history", str(tmp_path)])
    assert res.exit_code == 7 and "not a diagnose watch store" in res.output


def test_an_index_row_pointing_outside_its_store_gets_no_link(tmp_path):
    store = _store(tmp_path / "s", ["lock"])
    with Store.open(store) as s:
        row = s.latest()
        assert row is not None
        from dataclasses import replace

        from diagnose.watch.history import link

        assert link(s, replace(row, path="captures/../../etc")) is None
        assert link(s, replace(row, path="javascript:alert(1)")) is None


# --- fleet --------------------------------------------------------------------------------


def _fleet_inputs(tmp_path: Path) -> list[Path]:
    """Six pods: five healthy (three report.json files, two watch stores) and the recorded
    lock-bound bundle itself, judged now."""
    inputs = [
        write_report(tmp_path / f"pod-{i}" / "report.json", healthy_report(i)) for i in range(3)
    ]
    for i in (3, 4):
        with Store.create(tmp_path / f"pod-{i}") as store:
            add_capture(store, at(lock_report(), time.time() - 600), "1-20260101-000000", True)
            add_capture(store, at(healthy_report(i), time.time()), "1-20260101-000100", True)
        inputs.append(tmp_path / f"pod-{i}")
    return [*inputs, SOURCE]


def test_fleet_names_the_odd_pod_and_the_metrics_it_differs_on(tmp_path):
    # GIVEN six pods of which one (the recorded lock_contention bundle) waits on a lock
    pods = load_pods(_fleet_inputs(tmp_path))
    assert [p.input_kind for p in pods] == ["report"] * 3 + ["store"] * 2 + ["bundle"]
    # WHEN the fleet is summarised
    f = fleet(pods)
    # THEN the lock-bound pod, and it alone, is odd: for its verdict and its lock share
    assert f["odd"] == ["lock_contention"]
    assert f["majority"] == {"category": "compute", "kind": "cpu", "pods": 5}
    assert f["distribution"] == [
        {"category": "compute", "kind": "cpu", "count": 5},
        {"category": "lock", "kind": "mutex", "count": 1},
    ]
    odd = next(p for p in f["pods"] if p["odd"])
    assert odd["why"][0] == "verdict lock/mutex; 5 of 6 pods: compute/cpu"
    assert {o["metric"] for o in odd["outliers"]} >= {"busy_share_lock", "busy_share_running"}
    lock = next(o for o in odd["outliers"] if o["metric"] == "busy_share_lock")
    assert lock["deviations"] > 3.5 and lock["median"] < 0.05
    # the store's latest capture counted, not its first (a lock verdict)
    assert next(p for p in f["pods"] if p["name"] == "pod-3")["category"] == "compute"
    assert "lock_contention" in f["headline"]


def test_fleet_outputs_through_the_cli(tmp_path):
    inputs = [str(p) for p in _fleet_inputs(tmp_path)]
    res = CliRunner().invoke(main, ["fleet", *inputs, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["odd"] == ["lock_contention"]
    res = CliRunner().invoke(main, ["fleet", *inputs, "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "lock_contention" in res.stdout and "YES" in res.stdout
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "fleet.html",
        "fleet.md",
        "fleet.json",
    }
    assert "lock/mutex" in (tmp_path / "out" / "fleet.md").read_text()
    res = CliRunner().invoke(main, ["fleet", str(tmp_path / "nothing-here")])
    assert res.exit_code == 7


def test_fleet_renderers_escape_the_target(tmp_path):
    r = healthy_report()
    r["verdict"]["headline"] = EVIL
    pods = load_pods([write_report(tmp_path / f"p{i}" / "report.json", r) for i in range(3)])
    f = fleet(pods)
    f["pods"][0]["why"] = [EVIL]
    page = _Page()
    page.feed(render_fleet_html(f))
    assert "script" not in page.tags and "img" not in page.tags
    assert "![x]" not in render_fleet_markdown(f) and "\x1b" not in render_fleet_markdown(f)
    assert "\x1b" not in render_fleet_text(f)


def test_identical_pods_are_not_outliers_and_small_fleets_are_not_judged():
    same = deviations({"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.51}, "busy_share_lock")
    assert max(abs(d["deviations"]) for d in same.values()) < 1
    assert deviations({"a": 0.1, "b": 0.9}, "busy_share_lock") == {}
    wide = deviations({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 40.0}, "migrations_per_s")
    assert wide["e"]["deviations"] > 3.5 and abs(wide["a"]["deviations"]) < 3.5


def test_history_html_renders_an_empty_store(tmp_path):
    Store.create(tmp_path / "s").close()
    with Store.open(tmp_path / "s") as s:
        h = history(s)
    assert "No captures yet" in render_history_html(h)
    assert "no captures yet" in render_history_text(h)
