"""diagnose compare BEFORE AFTER: two bundles side by side, for the one-variable loop."""

from __future__ import annotations

import json
from pathlib import Path

import click

from diagnose.bundle.reader import Bundle
from diagnose.cli import main
from diagnose.cli.common import rules_option
from diagnose.compare import compare as compare_bundles
from diagnose.compare import write_comparison
from diagnose.escape import term
from diagnose.render.compare import render_compare_summary
from diagnose.report import parse_formats


@main.command()
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "formats",
    default="html,md,json",
    show_default=True,
    help="Comma-separated: html, md, json.",
)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output file (one format) or directory (default: inside the AFTER bundle, compare.*).",
)
@rules_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the comparison's JSON on stdout instead of the summary.",
)
def compare(
    before: Path,
    after: Path,
    formats: str,
    out: Path | None,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Compare two bundles: BEFORE (the baseline) and AFTER (one change later).

    \b
    Shows metric deltas (better or worse where a metric has a direction), the verdict
    change, findings that appeared or disappeared, and differential flame graphs (what got
    hotter, what got colder). Both bundles are diagnosed with the same rules.
    """
    fmts = parse_formats(formats)
    after_bundle = Bundle.open(after)  # held open: the comparison is written through it
    c = compare_bundles(before, after_bundle, rules_dirs)
    paths = write_comparison(c, after_bundle, fmts, out)
    if as_json:
        click.echo(json.dumps(c, indent=1))
        return
    main_path = paths.get("html") or next(iter(paths.values()))
    click.echo(render_compare_summary(c, str(main_path)))
    for fmt, path in paths.items():
        click.echo(f"{fmt}: {term(path, 1000)}", err=True)
