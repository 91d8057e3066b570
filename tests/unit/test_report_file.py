"""A report.json is enough: ``diagnose report REPORT.json`` draws the same HTML and Markdown
as the bundle did, and ``diagnose compare`` compares two report.json files as it compares
their bundles. On the recorded bundle; nothing is captured here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from diagnose.app.compare import compare
from diagnose.app.report import diagnose, write_reports
from diagnose.errors import ExitCode
from diagnose.render.model import MAX_STACKS, SMALLER_STACKS, report_flames, stack_section
from tests.conftest import FIXTURES
from tests.unit.test_cli import run_main


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture bundle's three reports, written as ``diagnose report`` writes them."""
    bundle = tmp_path_factory.mktemp("b") / "bundle"
    shutil.copytree(FIXTURES / "bundles" / "lock_contention", bundle)
    write_reports(bundle)
    return bundle


def test_the_report_json_draws_the_same_pages_as_the_bundle(written, tmp_path):
    # GIVEN only the report.json, away from its bundle
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    shutil.copy(written / "report.json", alone / "report.json")
    # WHEN it is rendered again
    res = run_main("report", str(alone / "report.json"), "--format", "html,md")
    assert res.returncode == 0, res.stderr
    # THEN the pages are those the bundle gave, byte for byte (flame graphs and charts too)
    for name in ("report.html", "report.md"):
        assert (alone / name).read_bytes() == (written / name).read_bytes(), name
    assert "Lock contention" in res.stdout  # the summary, from the report alone


def test_the_stacks_section_keeps_every_flame_view(written):
    analysis = diagnose(written).analysis
    back = report_flames(json.loads((written / "report.json").read_text()))
    assert set(back) == set(analysis.flames) == {"cpu", "wall", "waits", "offcpu"}
    for view, stacks in analysis.flames.items():
        want = {tuple(s): round(w, 6) for s, w in stacks}
        assert dict(back[view]) == want, view


def test_a_view_past_the_bound_keeps_its_total():
    # GIVEN more distinct stacks than a report keeps
    stacks = [(("thread (1): t", f"f{i} (a.py:{i})"), 1.0 + i) for i in range(MAX_STACKS + 10)]
    section = stack_section({"wall": stacks, "waits": []})
    back = report_flames({"stacks": section})
    # THEN the heaviest are kept, the rest add up into one stack, and the total is whole
    assert len(back["wall"]) == MAX_STACKS + 1
    assert back["wall"][0][0][-1] == f"f{MAX_STACKS + 9} (a.py:{MAX_STACKS + 9})"
    assert back["wall"][-1] == ((SMALLER_STACKS,), sum(1.0 + i for i in range(10)))
    assert sum(w for _, w in back["wall"]) == sum(w for _, w in stacks)
    assert back["waits"] == []  # recorded and empty stays apart from not recorded
    assert len(section["frames"]) == MAX_STACKS + 2  # each frame's text once


def test_compare_takes_two_report_json_files(written, tmp_path):
    # GIVEN two reports (the same capture judged twice) and their bundles
    before = tmp_path / "before.json"
    shutil.copy(written / "report.json", before)
    from_bundles = compare(written, written)
    from_reports = compare(before, written / "report.json")
    # THEN comparing the reports says what comparing the bundles says
    for key in ("verdict", "metrics", "findings", "flames", "caveats", "counts"):
        assert from_reports[key] == from_bundles[key], key
    res = run_main(
        "compare", str(before), str(written / "report.json"), "-o", str(tmp_path / "c"),
        "--format", "md,json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["flames"]["cpu"]["tree"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "is not a report.json: not JSON"),
        ('{"schema": "diagnose.compare/1"}', "is not a diagnose report (diagnose.report/1)"),
        ('{"schema": "diagnose.report/1", "metrics": {}}', "lacks bundle, target"),
    ],
)
def test_a_file_that_is_not_a_report_is_refused_in_one_line(tmp_path, content, message):
    path = tmp_path / "report.json"
    path.write_text(content)
    for args in (["report", str(path)], ["compare", str(path), str(path)]):
        res = run_main(*args)
        assert res.returncode == ExitCode.BAD_INPUT, res.stderr
        assert message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # nothing written


def test_rules_need_the_bundle_not_its_report(written, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    res = run_main("report", str(written / "report.json"), "--rules", str(rules))
    assert res.returncode == ExitCode.USAGE
    assert "give the bundle, not its report.json" in res.stderr


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r["verdict"].update(primary=3), "verdict.primary: expected a string"),
        (lambda r: r["findings"][0].update(fixes="restart"), "findings[0].fixes: expected a list"),
        (lambda r: r["findings"][0].pop("evidence"), "findings[0]: lacks evidence"),
        (lambda r: r["collectors"]["proc"].update(status=None), "collectors.proc.status"),
        (lambda r: r.update(metrics={"x": float("inf")}), "out of range"),
    ],
)
def test_a_report_with_fields_of_the_wrong_type_is_refused_in_one_line(
    written, tmp_path, change, message
):
    # GIVEN a report.json whose shape is right but a field a renderer reads is not
    report = json.loads((written / "report.json").read_text())
    change(report)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))  # inf is written as Infinity, which json reads back
    # THEN report and compare refuse it in one line (exit 7), not with a traceback
    for args in (["report", str(path)], ["compare", str(path), str(written / "report.json")]):
        res = run_main(*args, "-o", str(tmp_path / "out"))
        assert res.returncode == ExitCode.BAD_INPUT, res.stderr
        assert message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not (tmp_path / "out").exists()


def test_the_verdict_comes_before_the_markdown_and_the_html_page(tmp_path):
    # GIVEN a bundle, and a caller waiting for the verdict (attach prints it)
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "bundles" / "lock_contention", bundle)
    seen: list[tuple[str, bool, bool, bool]] = []

    def on_verdict(d, paths):
        seen.append(
            (
                d.report["verdict"]["primary"],
                (bundle / "report.json").is_file(),
                (bundle / "report.md").exists(),
                (bundle / "report.html").exists(),
            )
        )

    # WHEN its reports are written
    d, paths = write_reports(bundle, on_verdict=on_verdict)
    # THEN the verdict was handed over once, with report.json written and the others not yet
    assert seen == [(d.report["verdict"]["primary"], True, False, False)]
    # and then they were
    assert paths["md"].is_file() and paths["html"].is_file()
