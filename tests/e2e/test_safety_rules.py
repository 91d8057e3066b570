"""Rule files are data, through the real command line: a team's rule directory full of
attacks (calls, imports, attribute walks, power and string bombs, deep nesting, huge
numbers, glob blow-ups, a TOML bomb) is rejected rule by rule with file:line by
``diagnose rules check`` (exit 8); ``diagnose report --rules`` skips the bad rules, keeps
the good ones and lists what it skipped; nothing in them ever runs.
(tests/unit/test_fuzz_rules.py fuzzes every loader in-process.)"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.e2e.cli import run_cli

BUNDLE = FIXTURES / "bundles" / "lock_contention"


def _rule(rid: str, when: str, summary: str = "s") -> str:
    return textwrap.dedent(
        f"""\
        [[rule]]
        id = "{rid}"
        category = "lock"
        title = "{rid}"
        summary = '''{summary}'''
        when = '''{when}'''

        """
    )


def attacks(marker: Path) -> dict[str, tuple[str, str]]:
    """id -> (condition, message summary); each would create ``marker`` if it ran."""
    run = f"__import__('os').system('touch {marker}')"
    return {
        "team.call": (run, "function call"),
        "team.import": (f"busy_share_lock > 0 or {run} == 0", "function call"),
        "team.attribute": ("busy_share_lock.__class__.__base__ == 1", "attribute access"),
        "team.subclasses": ("().__class__.__bases__[0].__subclasses__() == 1", "function call"),
        "team.eval-string": (f'busy_share_lock == "{run}" + "x"', "strings can only"),
        "team.power": ("9 ** 9 ** 9 > busy_share_lock", "**"),
        "team.string-bomb": ("'x' * 10 ** 9 == 'y'", "strings can only"),
        "team.nesting": ("(" * 300 + "busy_share_lock" + ")" * 300 + " > 0", "nested"),
        "team.huge-number": ("busy_share_lock > " + "9" * 500, "out of range"),
        "team.chain": ("<".join(["1"] * 150), "parts"),
        "team.lambda": ("(lambda: 0) == 0", "lambda"),
    }


@pytest.fixture
def team(tmp_path) -> tuple[Path, Path, dict[str, tuple[str, str]]]:
    marker = tmp_path / "was-run"
    rules = tmp_path / "team"
    rules.mkdir()
    text = _rule("team.good", "busy_share_lock >= 0", "good {busy_share_lock:.2f}")
    evil = attacks(marker)
    for rid, (when, _) in evil.items():
        text += _rule(rid, when)
    text += _rule("team.template", "busy_share_lock >= 0", "{busy_share_lock.__class__}")
    (rules / "team.toml").write_text(text)
    return rules, marker, evil


def test_rules_check_names_each_bad_rule_with_file_and_line(team):
    rules, marker, evil = team
    res = run_cli("rules", "check", str(rules))
    assert res.returncode == 8, res.stderr
    lines = res.stdout.strip().splitlines()
    text = (rules / "team.toml").read_text().splitlines()
    assert len(lines) == len(evil) + 1  # every attack, and the template that walks attributes
    for rid, (_, message) in evil.items():
        line = next(ln for ln in lines if f": {rid}: " in ln)
        where = line.split(f": {rid}: ")[0]
        path, _, number = where.rpartition(":")
        assert path == str(rules / "team.toml")
        assert text[int(number) - 1].startswith("when = "), line  # the line of the condition
        assert message in line, line
    assert any("team.template: summary: " in ln for ln in lines)
    assert "1 rule(s) valid" in res.stderr
    assert not marker.exists()


def test_report_skips_bad_rules_keeps_good_ones_and_says_so(team, tmp_path):
    rules, marker, evil = team
    out = tmp_path / "r.json"
    res = run_cli("report", str(BUNDLE), "--rules", str(rules), "--format", "json", "-o", str(out))
    assert res.returncode == 0, res.stderr
    report = json.loads(out.read_text())
    assert len(report["broken_rules"]) == len(evil) + 1
    assert all(b.startswith(f"{rules / 'team.toml'}:") for b in report["broken_rules"])
    assert "team.good" in {f["id"] for f in report["findings"]}
    assert not marker.exists()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "frames.toml",
            '[[category]]\nname = "x"\nmatch = ["*a*a*a*a*a*a*a*a*a"]\n',
            "more than 8",
        ),
        ("frames.toml", '[[category]]\nname = "x"\nmatch = ["' + "?" * 300 + '"]\n', "1-200"),
        ("team.toml", "a = " + "[" * 50_000, "team.toml:1: "),
        ("team.toml", "x = 1\n" * 200_000, "limited to 1 MiB"),
    ],
    ids=["glob-stars", "glob-long", "toml-nesting", "toml-size"],
)
def test_files_built_to_exhaust_the_loader_are_rejected(tmp_path, name, text, message):
    rules = tmp_path / "team"
    rules.mkdir()
    (rules / name).write_text(text)
    res = run_cli("rules", "check", str(rules))
    assert res.returncode == 8
    assert message in res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    # and a report given these rules stops with the same one line, exit 8
    res = run_cli("report", str(BUNDLE), "--rules", str(rules), "-o", str(tmp_path / "r.md"))
    if name == "frames.toml":
        assert res.returncode == 8 and message in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    else:
        assert res.returncode == 0, res.stderr
