"""The one linter and formatter (ruff) is clean over the whole tree; mypy --strict is clean on
the whole library."""

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


#: mypy --strict checks the whole library.
STRICT = ["diagnose"]


def test_mypy_strict():
    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *STRICT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
