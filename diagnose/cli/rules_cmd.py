"""diagnose rules check DIR / rules list: validate and list rule files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from diagnose.cli.group import main
from diagnose.errors import ExitCode
from diagnose.render.text import plain
from diagnose.verdict.ruleset import BrokenRule, check_dir, load_rules


@main.group()
def rules() -> None:
    """Check and list rule files."""


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _problems(broken: list[BrokenRule]) -> list[dict[str, str]]:
    return [{"where": b.where, "id": b.id, "message": b.message} for b in broken]


@rules.command("check")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@json_option
def check(directory: Path, as_json: bool) -> None:
    """Validate every rule file in DIRECTORY; report each bad rule as file:line: message."""
    good, broken = check_dir(directory)
    if as_json:
        doc = {"directory": str(directory), "valid": good, "problems": _problems(broken)}
        click.echo(json.dumps(doc, indent=1))
    else:
        for b in broken:
            click.echo(plain(str(b), 1000))
    click.echo(f"{good} rule(s) valid, {len(broken)} problem(s) in {directory}", err=True)
    if broken:
        sys.exit(int(ExitCode.BAD_RULES))


@rules.command("list")
@click.option(
    "--rules", "rules_dirs", type=click.Path(path_type=Path, file_okay=False), multiple=True
)
@json_option
def list_rules(rules_dirs: tuple[Path, ...], as_json: bool) -> None:
    """List the rules in effect (built-in plus --rules directories)."""
    rs = load_rules(rules_dirs)
    ordered = sorted(rs.rules, key=lambda r: (r.category, r.id))
    if as_json:
        doc = {
            "rules": [
                {"id": r.id, "category": r.category, "kind": r.kind, "title": r.title,
                 "advisory": r.advisory, "source": r.source}
                for r in ordered
            ],
            "problems": _problems(rs.broken),
        }  # fmt: skip
        click.echo(json.dumps(doc, indent=1))
        return
    for r in ordered:
        adv = " (advisory)" if r.advisory else ""
        click.echo(f"{r.category:17} {r.id:40} {r.title}{adv}")
    for b in rs.broken:
        click.echo(f"BROKEN {plain(str(b), 1000)}")
