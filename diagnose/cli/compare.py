"""diagnose compare BEFORE AFTER: two bundles side by side, for the one-variable loop."""

from __future__ import annotations

import json
from pathlib import Path

import click

from diagnose.bundle.reader import Bundle
from diagnose.cli import main
from diagnose.cli.common import rules_option
from diagnose.compare import compare as compare_bundles
from diagnose.compare import open_comparison, write_comparison
from diagnose.errors import UsageError
from diagnose.escape import term
from diagnose.render.compare import render_compare_summary
from diagnose.report import STDOUT, is_stream, parse_formats


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
    help="Output file (one format; - for stdout) or directory (default: inside the AFTER bundle, compare.*).",
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
    if as_json and out == STDOUT:
        raise UsageError("--json and -o - both print on stdout: choose one")
    after_bundle = Bundle.open(after)  # held open: the comparison is written through it
    target = open_comparison(after_bundle, fmts, out)  # a bad -o is refused before analysing
    c = compare_bundles(before, after_bundle, rules_dirs)
    paths = write_comparison(c, target, fmts)
    files = {fmt: path for fmt, path in paths.items() if not is_stream(path)}
    if as_json:
        click.echo(json.dumps(c, indent=1))
    elif len(files) == len(paths):  # nothing went to stdout
        main_path = files.get("html") or next(iter(files.values()), out)
        click.echo(render_compare_summary(c, str(main_path)))
    for fmt, path in files.items():
        click.echo(f"{fmt}: {term(path, 1000)}", err=True)
