"""The one linter and formatter (ruff) is clean over the whole tree; mypy --strict is clean on
the packages that are typed so far (the analysis)."""

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _ruff() -> list[str]:
    exe = shutil.which("ruff")
    if exe:
        return [exe]
    return [sys.executable, "-m", "ruff"]


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff(args):
    res = subprocess.run([*_ruff(), *args], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


#: Packages mypy --strict checks (the rest of the library is typed later).
STRICT = ["diagnose/analyse"]


def test_mypy_strict():
    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *STRICT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
