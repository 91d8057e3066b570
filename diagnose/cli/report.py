"""diagnose report BUNDLE: (re)compute the diagnosis from a bundle and render it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from diagnose.cli import main
from diagnose.cli.common import rules_option
from diagnose.escape import term
from diagnose.render.sweep import render_sweep_summary
from diagnose.render.terminal import render_summary
from diagnose.report import parse_formats, write_reports
from diagnose.sweep.report import is_sweep_dir, write_sweep_reports


@main.command()
@click.argument("bundle", metavar="BUNDLE|SWEEPDIR", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "formats",
    default="html,md,json",
    show_default=True,
    help="Comma-separated: html, md, json.",
)
@rules_option
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output file (one format) or directory (default: inside the bundle).",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the paths written.")
def report(
    bundle: Path, formats: str, rules_dirs: tuple[Path, ...], out: Path | None, quiet: bool
) -> None:
    """Analyse BUNDLE and write its report (HTML, Markdown, JSON).

    The bundle alone is read: copy it anywhere and run this there. Given a sweep's
    directory (diagnose sweep), every step is diagnosed again and the sweep report rewritten.
    """
    if is_sweep_dir(bundle):
        model, spaths = write_sweep_reports(
            bundle, parse_formats(formats), rules_dirs, out, rediagnose=True
        )
        if not quiet:
            main_path = spaths.get("html") or next(iter(spaths.values()))
            click.echo(render_sweep_summary(model, str(main_path)))
        for fmt, path in spaths.items():
            click.echo(f"{fmt}: {path}", err=not quiet)
        return
    d, paths = write_reports(bundle, parse_formats(formats), out, rules_dirs)
    if not quiet:
        main_path = paths.get("html") or next(iter(paths.values()))
        click.echo(render_summary(d.report, str(main_path), color=sys.stdout.isatty()))
    for fmt, path in paths.items():
        click.echo(f"{fmt}: {term(path, 1000)}", err=not quiet)
