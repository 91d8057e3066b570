"""diagnose compare BEFORE AFTER: two bundles side by side, for the one-variable loop."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from diagnose.app.compare import compare as compare_bundles
from diagnose.app.compare import open_comparison, open_side, write_comparison
from diagnose.app.output import STDOUT, is_stream
from diagnose.app.reporters import formats_of, parse_formats
from diagnose.app.sweep import step_figures
from diagnose.bundle.reader import Bundle
from diagnose.cli.common import rules_option
from diagnose.cli.group import main
from diagnose.errors import DiagnoseError, ExitCode, UsageError
from diagnose.escape import term
from diagnose.render.compare import render_compare_summary
from diagnose.render.schema import is_report_file
from diagnose.render.terminal import fit
from diagnose.sweep.loadgen import read_stats_file
from diagnose.verdict.outcome import figures, from_load


@main.command()
@click.argument("before", type=click.Path(path_type=Path))
@click.argument("after", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "formats",
    default=",".join(formats_of("compare")),
    show_default=True,
    help="Comma-separated: " + ", ".join(formats_of("compare")) + ".",
)
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output file (one format; - for stdout) or directory (default: inside the AFTER bundle, compare.*).",
)
@click.option(
    "--before-load",
    type=click.Path(path_type=Path),
    default=None,
    help="The load generator's figures for BEFORE: locust's --csv PREFIX_stats.csv, wrk's output, or a JSON line with requests and seconds (docs/sweep.md).",
)
@click.option(
    "--after-load",
    type=click.Path(path_type=Path),
    default=None,
    help="The same for AFTER.",
)
@click.option(
    "--before-qps",
    type=float,
    default=None,
    help="BEFORE's throughput (successful requests per second), as you measured it.",
)
@click.option("--after-qps", type=float, default=None, help="AFTER's throughput.")
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
    before_load: Path | None,
    after_load: Path | None,
    before_qps: float | None,
    after_qps: float | None,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Compare two bundles: BEFORE (the baseline) and AFTER (one change later).

    Either side may be a report.json instead of a bundle (what diagnose attach or report
    wrote): it is compared as it was judged then.

    \b
    Shows first the service's own figures (throughput, latency percentiles, errors) and
    whether it improved, then the verdict change in words, metric deltas (better or worse
    where a metric has a direction; "moved" where it moved because the bottleneck is gone
    or the service does more work), findings that appeared or disappeared, and
    differential flame graphs. Both bundles are diagnosed with the same rules.

    \b
    The service's figures come from --before-load/--after-load (a load generator's stats
    file), --before-qps/--after-qps (numbers you measured; they override a file's
    throughput), or, for bundles of a sweep's steps, from the sweep's record.
    """
    fmts = parse_formats(formats, "compare")
    if as_json and out == STDOUT:
        raise UsageError("--json and -o - both print on stdout: choose one")
    service = (
        service_figures(before, before_load, before_qps, "--before"),
        service_figures(after, after_load, after_qps, "--after"),
    )
    # both sides opened and checked first; a bundle is held open (the comparison is
    # written through it); a bad -o is refused before analysing
    before_side, after_side = open_side(before, rules_dirs), open_side(after, rules_dirs)
    target = open_comparison(after_side if isinstance(after_side, Bundle) else after, fmts, out)
    c = compare_bundles(before_side, after_side, rules_dirs, service)
    paths = write_comparison(c, target, fmts)
    files = {fmt: path for fmt, path in paths.items() if not is_stream(path)}
    if as_json:
        click.echo(json.dumps(c, indent=1))
    elif len(files) == len(paths):  # nothing went to stdout
        main_path = files.get("html") or next(iter(files.values()), out)
        click.echo("\n".join(fit(render_compare_summary(c, str(main_path)).splitlines())))
    for fmt, path in files.items():
        click.echo(f"{fmt}: {term(path, 1000)}", err=True)


def service_figures(
    bundle: Path, load: Path | None, qps: float | None, flag: str
) -> dict[str, Any] | None:
    """One side's own figures: the stats file's, with ``qps`` as given; else the sweep
    step's when the bundle is one."""
    if qps is not None and not (math.isfinite(qps) and qps >= 0):
        raise UsageError(
            f"{flag}-qps must be a number of requests per second (0 or more), not {qps:g}"
        )
    if load is not None:
        try:
            f = read_stats_file(load)
        except OSError as exc:
            raise DiagnoseError(
                f"{flag}-load: cannot read {term(load, 300)}: {exc.strerror or exc}",
                ExitCode.BAD_INPUT,
            ) from None
        except ValueError as exc:
            raise DiagnoseError(
                f"{flag}-load {term(load, 300)}: {term(str(exc), 300)}", ExitCode.BAD_INPUT
            ) from None
        figs: dict[str, Any] | None = from_load(f.to_dict(), f"{f.tool} figures from {load.name}")
    else:
        figs = step_figures(bundle.parent if is_report_file(bundle) else bundle)
    if qps is not None:
        figs = {**(figs or figures(source="given")), "qps": qps}
        figs["source"] = (
            f"{flag}-qps" if figs["source"] == "given" else f"{figs['source']}, {flag}-qps"
        )
    return figs
