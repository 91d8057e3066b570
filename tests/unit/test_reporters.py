"""The one table of reporters (diagnose/app/reporters.py) serves every format of every command
that writes files: report, compare, sweep and fleet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from diagnose.app.compare import build_comparison, write_comparison
from diagnose.app.fleet import Pod, fleet, write_fleet
from diagnose.app.output import OutputTarget, open_directory, open_output
from diagnose.app.report import diagnose, render_reports
from diagnose.app.reporters import REPORTERS, file_names, formats_of, parse_formats, write_formats
from diagnose.errors import UsageError
from tests.conftest import FIXTURES
from tests.unit.test_sweep_report import pool_report

CASES = [(command, fmt) for command, table in REPORTERS.items() for fmt in table]


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    """GIVEN one real model per command, built as the commands build them."""
    report = diagnose(FIXTURES / "bundles" / "lock_contention").report
    pods = [Pod(f"pod-{i}", f"/pods/{i}", "report", report) for i in range(3)]
    return {
        "report": report,
        "compare": build_comparison(report, report),
        "sweep": pool_report(sla=200, peak=100),
        "fleet": fleet(pods),
    }


def test_every_command_writes_html_markdown_and_json():
    assert set(REPORTERS) == {"report", "compare", "sweep", "fleet"}
    for command in REPORTERS:
        assert formats_of(command) == ("html", "md", "json")


@pytest.mark.parametrize(("command", "fmt"), CASES)
def test_the_table_serves_each_format_of_each_command(command, fmt, models, tmp_path):
    # WHEN the table writes the command's model in one format into a directory
    with open_directory(tmp_path, create=False) as held:
        target = OutputTarget(held, file_names(command))
        write_formats(command, models[command], target, [fmt])
    # THEN exactly that file is there, named by the table, with the format's content
    name = REPORTERS[command][fmt].file_name
    assert name.endswith(f".{fmt}") and [p.name for p in tmp_path.iterdir()] == [name]
    text = (tmp_path / name).read_text(encoding="utf-8")
    if fmt == "json":
        assert json.loads(text) == json.loads(json.dumps(models[command], default=str))
    elif fmt == "html":
        assert text.lstrip().lower().startswith("<!doctype html>")
    else:
        assert text.startswith("#") and text.endswith("\n")


@pytest.mark.parametrize("command", list(REPORTERS))
def test_parse_formats_knows_the_table(command):
    assert parse_formats("markdown, JSON,md", command) == ["md", "json"]
    with pytest.raises(UsageError, match="choose from html, md, json"):
        parse_formats("pdf", command)


def _written(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


def test_report_compare_and_fleet_write_through_the_table(models, tmp_path, monkeypatch):
    # the commands' own writers put the files the table names where they are asked to
    for command in ("report", "compare", "fleet"):
        out = tmp_path / command
        out.mkdir()
        if command == "report":
            with open_directory(out, create=False) as held:
                render_reports(models["report"], OutputTarget(held, file_names("report")),
                               list(formats_of("report")))  # fmt: skip
        elif command == "compare":
            fmts = list(formats_of("compare"))
            with open_directory(tmp_path, create=False) as here:
                target = open_output(here, fmts, out, file_names("compare"))
                write_comparison(models["compare"], target, fmts)
        else:
            monkeypatch.chdir(tmp_path)
            write_fleet(models["fleet"], list(formats_of("fleet")), Path(command))
        assert _written(out) == sorted(file_names(command).values())
