"""diagnose rules check DIR / rules list: validate and list rule files."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from diagnose.cli import main
from diagnose.errors import ExitCode
from diagnose.render.text import plain
from diagnose.verdict.ruleset import check_dir, load_rules


@main.group()
def rules() -> None:
    """Check and list rule files."""


@rules.command("check")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
def check(directory: Path) -> None:
    """Validate every rule file in DIRECTORY; report each bad rule as file:line: message."""
    good, broken = check_dir(directory)
    for b in broken:
        click.echo(plain(str(b), 1000))
    click.echo(f"{good} rule(s) valid, {len(broken)} problem(s) in {directory}", err=True)
    if broken:
        sys.exit(int(ExitCode.BAD_RULES))


@rules.command("list")
@click.option(
    "--rules", "rules_dirs", type=click.Path(path_type=Path, file_okay=False), multiple=True
)
def list_rules(rules_dirs: tuple[Path, ...]) -> None:
    """List the rules in effect (built-in plus --rules directories)."""
    rs = load_rules(rules_dirs)
    for r in sorted(rs.rules, key=lambda r: (r.category, r.id)):
        adv = " (advisory)" if r.advisory else ""
        click.echo(f"{r.category:17} {r.id:40} {r.title}{adv}")
    for b in rs.broken:
        click.echo(f"BROKEN {plain(str(b), 1000)}")
