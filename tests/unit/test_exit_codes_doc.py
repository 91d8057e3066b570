"""The README's exit-code table is generated from diagnose/errors.py and must be current;
what a PID that is not one exits with is what the table says."""

from __future__ import annotations

import re

import pytest

from diagnose.errors import (
    MEANINGS,
    TABLE_BEGIN,
    TABLE_END,
    ExitCode,
    exit_code_table,
    with_exit_code_table,
)
from tests.conftest import ROOT
from tests.unit.test_cli import run_main


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_table_is_generated_from_errors_py():
    # GIVEN the committed README WHEN its table is regenerated THEN nothing changes
    readme = _readme()
    assert with_exit_code_table(readme) == readme, (
        "README.md's exit-code table is stale: run `python -m diagnose.errors README.md`"
    )


def test_every_exit_code_has_one_row_and_a_meaning():
    table = exit_code_table()
    codes = [int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", table, re.M)]
    assert codes == [int(c) for c in ExitCode]
    assert set(MEANINGS) == set(ExitCode)


def test_a_stale_table_is_replaced_and_a_missing_one_refused():
    # GIVEN a README whose table says something else WHEN regenerated THEN the table is ours
    stale = f"intro\n{TABLE_BEGIN}\n| 3 | not a process ID |\n{TABLE_END}\nafter\n"
    fixed = with_exit_code_table(stale)
    assert fixed == f"intro\n{TABLE_BEGIN}\n{exit_code_table()}{TABLE_END}\nafter\n"
    with pytest.raises(ValueError, match="no"):
        with_exit_code_table("a README without markers\n")


@pytest.mark.parametrize(
    "args", [["attach", "abc"], ["attach", "0"], ["doctor", "0"], ["sweep", "0", "--load", "x"]]
)
def test_a_pid_that_is_not_one_is_a_usage_error(args):
    # GIVEN a PID argument that is no positive whole number WHEN run THEN exit 2, as the table says
    res = run_main(*args)
    assert res.returncode == ExitCode.USAGE == 2, res.stderr
    assert "a PID that is not a positive whole number" in MEANINGS[ExitCode.USAGE]
