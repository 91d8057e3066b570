"""diagnose compare BEFORE AFTER: two bundles side by side, for the one-variable loop."""

from __future__ import annotations

import json
from pathlib import Path

import click

from diagnose.cli import main
from diagnose.cli.common import rules_option
from diagnose.compare import compare as compare_bundles
from diagnose.compare import write_comparison
from diagnose.errors import UsageError
from diagnose.render.compare import render_compare_summary
from diagnose.report import STDOUT, is_stream, output_paths, parse_formats


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
    output_paths(after, fmts, out)  # bad -o is refused before the two analyses
    c = compare_bundles(before, after, rules_dirs)
    paths = write_comparison(c, after, fmts, out)
    files = {fmt: path for fmt, path in paths.items() if not is_stream(path)}
    if as_json:
        click.echo(json.dumps(c, indent=1))
    elif len(files) == len(paths):  # nothing went to stdout
        main_path = files.get("html") or next(iter(files.values()), out)
        click.echo(render_compare_summary(c, str(main_path)))
    for fmt, path in files.items():
        click.echo(f"{fmt}: {path}", err=True)
