"""diagnose doctor [PID]: what this host (and this target) lets each collector do."""

from __future__ import annotations

import json

import click

from diagnose.cli.group import main
from diagnose.doctor import diagnose_host, render_text
from diagnose.render.terminal import fit


@main.command()
@click.argument("pid", type=click.IntRange(min=1), required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def doctor(pid: int | None, as_json: bool) -> None:
    """Check what diagnose can measure here, and for PID if given, with the fix for each gap.

    Exits 0 when it could tell (whatever it found), 3 when PID does not exist.
    """
    report = diagnose_host(pid)
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        click.echo("\n".join(fit(render_text(report).splitlines())))
