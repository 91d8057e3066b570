"""diagnose run [OPTIONS] -- CMD ...: start a command, diagnose it, stop it."""

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
    report_capture,
)
from diagnose.cli.group import main
from diagnose.collect.base import CaptureOptions
from diagnose.render.text import plain
from diagnose.run import run_command


@main.command(context_settings={"allow_interspersed_args": False})
@click.argument("argv", metavar="-- CMD [ARGS]...", nargs=-1, required=True)
@bundle_out_option
@capture_options
@click.option(
    "--warmup",
    type=float,
    default=1.0,
    show_default=True,
    help="Seconds between starting the command and starting the capture (start-up, model load, first requests).",
)
@click.option(
    "--grace",
    type=float,
    default=5.0,
    show_default=True,
    help="After the capture the command's process group gets SIGTERM, and SIGKILL this many seconds later.",
)
@after_capture_options
def run(
    argv: tuple[str, ...],
    out: Path | None,
    options: CaptureOptions,
    warmup: float,
    grace: float,
    follow: bool,
    formats: str,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Start CMD, capture it for --duration seconds after --warmup, stop it, report.

    \b
    The capture is the same as attach's. CMD runs in its own process group, with stdin
    from /dev/null and its output on this terminal (on stderr with --json, so stdout stays
    one JSON document). After the capture it is stopped: SIGTERM to its process group, then
    SIGKILL after --grace. If diagnose is interrupted or killed, the command goes too.

    \b
    CMD exiting before the capture ends gives a partial bundle, still reported (exit code
    5); CMD that cannot start, or exits during the warm-up, is an error (exit code 3). The
    command's exit status is printed, kept in the manifest (capture.run) and in the JSON.
    Give a command that ends by itself more run time than --warmup + --duration.
    """
    fmts = parse_formats(formats)
    progress = Progress()
    try:
        result = run_command(
            argv,
            out,
            options,
            warmup=warmup,
            grace=grace,
            follow_children=follow,
            progress=progress,
            command=sys.argv,
            stdout=sys.stderr if as_json else None,
        )
    finally:
        progress.done()
    note = f"Command: {plain(' '.join(result.command.argv), 200)} {result.command.describe()}"
    report_capture(result.capture, fmts, rules_dirs, as_json, notes=[note])
