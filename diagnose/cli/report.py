"""diagnose report BUNDLE: (re)compute the diagnosis from a bundle and render it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from diagnose.app.output import STDOUT, is_stream
from diagnose.app.report import report_json, write_report_file, write_reports
from diagnose.app.reporters import formats_of, parse_formats
from diagnose.app.sweep import write_sweep_reports
from diagnose.cli.common import rules_option
from diagnose.cli.group import main
from diagnose.errors import UsageError
from diagnose.escape import term
from diagnose.render.schema import is_report_file
from diagnose.render.sweep import render_sweep_summary
from diagnose.render.terminal import render_summary
from diagnose.sweep.record import is_sweep_dir


@main.command()
@click.argument("bundle", metavar="BUNDLE|SWEEPDIR|REPORT.json", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "formats",
    default=",".join(formats_of("report")),
    show_default=True,
    help="Comma-separated: " + ", ".join(formats_of("report")) + ".",
)
@rules_option
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output file (one format; - for stdout) or directory (default: inside the bundle).",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the paths written.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report's JSON on stdout instead of the summary.",
)
def report(
    bundle: Path,
    formats: str,
    rules_dirs: tuple[Path, ...],
    out: Path | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Analyse BUNDLE and write its report (HTML, Markdown, JSON).

    The bundle alone is read: copy it anywhere and run this there. Given a sweep's
    directory (diagnose sweep), every step is diagnosed again and the sweep report rewritten.
    Given a report.json, its HTML, Markdown and summary are drawn again from it alone (no
    bundle, no analysis; the verdict stays the one it holds).
    With -o - the one format asked for (--format) is written to stdout, and nothing else is.
    """
    fmts = parse_formats(formats)
    if as_json and out == STDOUT:
        raise UsageError("--json and -o - both print on stdout: choose one")
    if is_sweep_dir(bundle):
        model, paths = write_sweep_reports(bundle, fmts, rules_dirs, out, rediagnose=True)
        as_text = json.dumps(model, indent=1, ensure_ascii=False, allow_nan=False)

        def summary(main_path: str) -> str:
            return render_sweep_summary(model, main_path)

    else:
        if is_report_file(bundle):
            if rules_dirs:
                raise UsageError(
                    "--rules judges a bundle again: give the bundle, not its report.json"
                )
            rep, paths = write_report_file(bundle, fmts, out)
        else:
            d, paths = write_reports(bundle, fmts, out, rules_dirs)
            rep = d.report
        as_text = report_json(rep)

        def summary(main_path: str) -> str:
            return render_summary(rep, main_path, color=sys.stdout.isatty())

    files = {fmt: path for fmt, path in paths.items() if not is_stream(path)}
    if as_json:
        click.echo(as_text)
    elif not quiet and len(files) == len(paths):  # nothing went to stdout
        main_path = files.get("html") or next(iter(files.values()), out)
        click.echo(summary(str(main_path)))
    for fmt, path in files.items():
        click.echo(f"{fmt}: {term(path, 1000)}", err=not quiet or as_json)
