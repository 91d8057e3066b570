"""diagnose attach PID: capture a running process, then diagnose it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from diagnose.app.reporters import parse_formats
from diagnose.cli.common import (
    Progress,
    after_capture_options,
    bundle_out_option,
    capture_options,
    report_bundle_only,
    report_capture,
)
from diagnose.cli.group import main
from diagnose.collect.base import CaptureOptions
from diagnose.collect.perf import pollfix
from diagnose.collect.session import capture


@main.command()
@click.argument("pid", type=click.IntRange(min=1))  # not a PID: bad arguments (exit 2)
@bundle_out_option
@capture_options
@after_capture_options
@click.option(
    "--no-report",
    is_flag=True,
    help="Record the bundle only (less CPU right after the capture); "
    "`diagnose report BUNDLE` judges it later.",
)
@click.option("--siblings", default="", hidden=True)  # collect/workers.py: the service's others
@click.option("--pollfix-fd", type=int, default=None, hidden=True)  # collect/workers.py
def attach(
    pid: int,
    out: Path | None,
    options: CaptureOptions,
    follow: bool,
    formats: str,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
    no_report: bool,
    siblings: str,
    pollfix_fd: int | None,
) -> None:
    """Capture PID for --duration seconds into a bundle, then write its report.

    Ctrl-C ends the capture early and still writes a complete bundle.
    """
    fmts = parse_formats(formats)
    progress = Progress()
    others = tuple(int(p) for p in siblings.split(",") if p.strip().isdigit())
    if pollfix_fd is not None:
        pollfix.inherit(pollfix_fd)  # a worker's capture: perf's poll() fix, built already
    result = capture(
        pid,
        out,
        options,
        follow,
        progress=progress,
        command=sys.argv,
        siblings=others,
        analysed=not no_report,
    )
    progress.done()
    if no_report:
        report_bundle_only(result)
        return
    report_capture(result, fmts, rules_dirs, as_json)
