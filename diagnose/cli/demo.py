"""diagnose demo: the whole job on a bundled sample inference service."""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import datetime
from pathlib import Path

import click

from diagnose.app.report import report_json, write_reports
from diagnose.cli.common import Progress, bundle_dir_callback
from diagnose.cli.group import main
from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import validate_options
from diagnose.demo import (
    DEFAULT_SAMPLE,
    available_samples,
    check_sample,
    expectation_lines,
    run_demo,
    sample_expected,
    sample_summary,
)
from diagnose.errors import ExitCode
from diagnose.render.terminal import render_summary


@main.command()
@click.option(
    "--sample",
    default=DEFAULT_SAMPLE,
    show_default=True,
    help="Which bundled sample to run (see --list).",
)
@click.option(
    "--duration", "-d", type=float, default=8.0, show_default=True, help="Seconds to capture."
)
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    callback=bundle_dir_callback,
    help="Bundle directory (default: ./diagnose-demo-TIMESTAMP).",
)
@click.option(
    "--list",
    "list_samples",
    is_flag=True,
    help="List the bundled samples, what each shows, and exit.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report's JSON (with --list: the samples) on stdout instead of the summary.",
)
def demo(sample: str, duration: float, out: Path | None, list_samples: bool, as_json: bool) -> None:
    """Start a sample inference service, diagnose it, print the verdict and the report's path.

    The sample is stopped afterwards, whatever happens.
    """
    if list_samples:
        names = available_samples()
        if as_json:
            samples = [
                {"name": n, "shows": sample_summary(n), "default": n == DEFAULT_SAMPLE}
                for n in names
            ]
            click.echo(json.dumps(samples, indent=1))
            return
        width = max(map(len, names), default=0)
        for name in names:
            default = " (the default)" if name == DEFAULT_SAMPLE else ""
            click.echo(f"{name:{width}}  {sample_summary(name)}{default}")
        return
    check_sample(sample)  # bad input is refused before anything starts
    validate_options(CaptureOptions(duration=duration))
    out = out or Path(f"diagnose-demo-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
    click.echo(f"diagnose demo: starting sample '{sample}', capturing {duration:g} s ...", err=True)
    progress = Progress()
    result = run_demo(sample, out, duration, progress=progress, command=sys.argv)
    progress.done()
    d, paths = write_reports(result.writer.dir.dup() if result.writer else result.bundle)
    # what the sample is for next to what it got: a busy host can put something else first
    expectation = "\n".join(
        textwrap.fill(
            line, 100, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        )
        for line in expectation_lines(sample, sample_expected(sample), d.report)
    )
    if as_json:
        click.echo(report_json(d.report))
        if expectation:
            click.echo(expectation, err=True)  # stdout stays one JSON document
    else:
        html = str(paths["html"].resolve())
        click.echo(render_summary(d.report, html, color=sys.stdout.isatty()))
        if expectation:
            click.echo(expectation)
        click.echo(f"Bundle: {result.bundle.resolve()}")
    if result.partial:
        sys.exit(int(ExitCode.PARTIAL))
