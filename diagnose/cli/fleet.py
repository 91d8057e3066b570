"""diagnose fleet INPUT...: many pods' captures side by side, and the pods that differ."""

from __future__ import annotations

import json
from pathlib import Path

import click

from diagnose.app.fleet import DEFAULT_THRESHOLD, load_pods, write_fleet
from diagnose.app.fleet import fleet as fleet_model
from diagnose.app.output import STDOUT, is_stream
from diagnose.app.reporters import formats_of, parse_formats
from diagnose.cli.common import rules_option
from diagnose.cli.group import main
from diagnose.errors import UsageError
from diagnose.escape import term
from diagnose.render.watch import render_fleet_text


@main.command()
@click.argument("inputs", metavar="STORE|BUNDLE|REPORT.json...", nargs=-1, required=True,
                type=click.Path(path_type=Path))  # fmt: skip
@click.option("--threshold", type=float, default=DEFAULT_THRESHOLD, show_default=True,
              help="Robust deviations (median/MAD) beyond which a pod's metric is odd.")  # fmt: skip
@click.option("--format", "formats", default=",".join(formats_of("fleet")), show_default=True,
              help="Files to write with -o.")  # fmt: skip
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=None,
              help="Directory for fleet.html/md/json, one file for one format, or - for stdout.")  # fmt: skip
@rules_option
@click.option("--json", "as_json", is_flag=True, help="Print the fleet's JSON on stdout.")
def fleet(
    inputs: tuple[Path, ...],
    threshold: float,
    formats: str,
    out: Path | None,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Summarise many pods: each input is one pod's watch store (its latest capture), bundle
    (judged now) or report.json. Prints the verdict distribution and one row per pod, with
    the pods that differ from the rest and on which metric."""
    if not (threshold > 0):
        raise UsageError(f"--threshold must be more than 0, not {threshold:g}")
    if as_json and out == STDOUT:
        raise UsageError("--json and -o - both print on stdout: choose one")
    fmts = parse_formats(formats, "fleet")
    model = fleet_model(load_pods(inputs, rules_dirs), threshold)
    paths = write_fleet(model, fmts, out) if out is not None else {}
    if as_json:
        click.echo(json.dumps(model, indent=1, ensure_ascii=False, allow_nan=False))
    elif out is None or not is_stream(out):
        click.echo(render_fleet_text(model), nl=False)
    if out is not None and not is_stream(out):
        for fmt, path in paths.items():
            click.echo(f"{fmt}: {term(path, 1000)}", err=True)
