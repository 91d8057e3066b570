"""``diagnose attach`` starts recording without importing what only reading a bundle needs
(cli/group.py): pandas, pyarrow and jinja2 took about a second to import here, all of it
before the capture window opened. The capture imports them aside while its collectors start
(collect/session.py); the CLI itself must not."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from diagnose.cli import main
from diagnose.cli.group import COMMANDS

HEAVY = ("pandas", "pyarrow", "numpy", "jinja2")


def _imported_after(argv: list[str], then: str = "") -> list[str]:
    code = (
        "import json, sys\n"
        "from diagnose.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"{then}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    found: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("command", ["attach", "run", "watch"])
def test_a_capture_command_starts_without_the_analysis_libraries(command: str):
    assert _imported_after([command, "--help"]) == []


def test_the_probe_sees_the_libraries_a_bundle_reader_imports():
    # the check above would pass if the probe saw nothing: the same probe, reading bundles
    assert _imported_after(["attach", "--help"], "import diagnose.bundle.reader") == [
        "numpy",
        "pandas",
        "pyarrow",
    ]


def test_every_command_is_listed_and_found_by_its_name():
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        cmd = main.get_command(ctx, name)
        assert cmd is not None and cmd.name == name
    assert main.get_command(ctx, "no-such-command") is None
