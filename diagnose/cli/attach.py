"""diagnose attach PID: capture a running process, then diagnose it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from diagnose.cli import main
from diagnose.cli.common import Progress, capture_options, make_options, rules_option
from diagnose.collect.session import capture
from diagnose.errors import ExitCode
from diagnose.render.terminal import render_summary
from diagnose.report import parse_formats, write_reports


@main.command()
@click.argument("pid", type=int)
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Bundle directory to create (default: ./diagnose-PID-TIMESTAMP).",
)
@capture_options
@click.option(
    "--follow/--no-follow",
    default=True,
    show_default=True,
    help="When PID is a wrapper (a shell, a gunicorn master), capture its busiest Python child instead.",
)
@click.option(
    "--format",
    "formats",
    default="html,md,json",
    show_default=True,
    help="Reports to write into the bundle.",
)
@rules_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report's JSON on stdout instead of the summary.",
)
def attach(
    pid: int,
    out: Path | None,
    duration: float,
    rate: int,
    proc_rate: int,
    native: bool,
    nonblocking: bool,
    collectors: str | None,
    max_bundle_mb: int,
    follow: bool,
    formats: str,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Capture PID for --duration seconds into a bundle, then write its report.

    Ctrl-C ends the capture early and still writes a complete bundle.
    """
    options = make_options(
        duration, rate, proc_rate, native, nonblocking, collectors, max_bundle_mb
    )
    fmts = parse_formats(formats)
    progress = Progress()
    result = capture(pid, out, options, follow_children=follow, progress=progress, command=sys.argv)
    progress.done()
    if result.target.note:
        click.echo(f"diagnose: {result.target.note}", err=True)
    d, paths = write_reports(result.bundle, fmts, None, rules_dirs)
    if as_json:
        click.echo(json.dumps(d.report, indent=1))
    else:
        main_path = paths.get("html") or next(iter(paths.values()))
        click.echo(render_summary(d.report, str(main_path), color=sys.stdout.isatty()))
        click.echo(f"Bundle: {result.bundle}")
    if result.partial:
        sys.exit(int(ExitCode.PARTIAL))
