"""diagnose demo: the whole job on a bundled sample inference service."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from diagnose.cli import main
from diagnose.cli.common import Progress
from diagnose.demo import DEFAULT_SAMPLE, available_samples, run_demo
from diagnose.errors import ExitCode
from diagnose.render.terminal import render_summary
from diagnose.report import write_reports


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
    help="Bundle directory (default: ./diagnose-demo-TIMESTAMP).",
)
@click.option("--list", "list_samples", is_flag=True, help="List the bundled samples and exit.")
def demo(sample: str, duration: float, out: Path | None, list_samples: bool) -> None:
    """Start a sample inference service, diagnose it, print the verdict and the report's path.

    The sample is stopped afterwards, whatever happens.
    """
    if list_samples:
        for name in available_samples():
            click.echo(name)
        return
    out = out or Path(f"diagnose-demo-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
    click.echo(f"diagnose demo: starting sample '{sample}', capturing {duration:g} s ...", err=True)
    progress = Progress()
    result = run_demo(sample, out, duration, progress=progress, command=sys.argv)
    progress.done()
    d, paths = write_reports(result.writer.dir.dup() if result.writer else result.bundle)
    click.echo(render_summary(d.report, str(paths["html"].resolve()), color=sys.stdout.isatty()))
    click.echo(f"Bundle: {result.bundle.resolve()}")
    if result.partial:
        sys.exit(int(ExitCode.PARTIAL))
