"""diagnose export BUNDLE: the bundle's flame views as pprof or speedscope files."""

from __future__ import annotations

from pathlib import Path

import click

from diagnose.app.export import export_bundle
from diagnose.app.output import is_stream
from diagnose.cli.common import rules_option
from diagnose.cli.group import main
from diagnose.escape import term
from diagnose.export.encoders import ENCODERS
from diagnose.export.views import VIEWS


@main.command()
@click.argument("bundle", metavar="BUNDLE", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(ENCODERS)),
    default="pprof",
    show_default=True,
    help="pprof: gzipped profile.proto (go tool pprof, Pyroscope, Parca, Grafana); "
    "speedscope: JSON for speedscope.app.",
)
@click.option("--view", type=click.Choice(VIEWS), default=None, help="Export this view only.")
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Directory (default: the bundle's), one file for one view, or - for stdout.",
)
@rules_option
@click.option("--quiet", "-q", is_flag=True, help="Print nothing.")
def export(
    bundle: Path,
    fmt: str,
    view: str | None,
    out: Path | None,
    rules_dirs: tuple[Path, ...],
    quiet: bool,
) -> None:
    """Write BUNDLE's flame views (cpu, offcpu, waits, wall: those it holds) as profiles.

    One file per view (VIEW.pb.gz, or VIEW.speedscope.json), its samples labelled with
    thread_id, thread_name, thread_role and, on-CPU, stage. docs/export.md says how to open
    them in go tool pprof, Pyroscope, Grafana or speedscope.
    """
    paths = export_bundle(bundle, fmt, out, view, rules_dirs)
    if not quiet:
        for name, path in paths.items():
            if not is_stream(path):
                click.echo(f"{name}: {term(path, 1000)}")
