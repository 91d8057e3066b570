"""diagnose sweep: a stepped load test with a real load generator, a capture per step, the
knee, and the capacity plan (docs/sweep.md)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from diagnose.app.reporters import formats_of, parse_formats
from diagnose.app.sweep import write_sweep_reports
from diagnose.app.sweep_runner import Sweep, SweepPlan, sweep_is_partial
from diagnose.cli.common import Progress, make_options, rules_option
from diagnose.cli.group import main
from diagnose.collect.registry import COLLECTORS
from diagnose.errors import DiagnoseError, ExitCode, UsageError
from diagnose.render.schema import Report
from diagnose.render.sweep import render_sweep_summary, step_line, table_header
from diagnose.render.terminal import fit
from diagnose.sweep.plan import Setting, parse_load, parse_steps, parse_vary, settings_for
from diagnose.words import count


def _target(target: tuple[str, ...], run: bool) -> tuple[int | None, tuple[str, ...]]:
    if run:
        if not target:
            raise UsageError(
                "--run needs the command after --: diagnose sweep --run ... -- CMD ARGS"
            )
        return None, target
    if len(target) != 1 or not target[0].isdigit() or int(target[0]) == 0:
        raise UsageError(
            "give the service's PID (diagnose sweep PID --load ...), or --run -- CMD ARGS to "
            "start it"
        )
    return int(target[0]), ()


def _default_out(pid: int | None, argv: tuple[str, ...]) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = str(pid) if pid is not None else Path(argv[0]).name[:20] or "cmd"
    return Path(f"diagnose-sweep-{name}-{stamp}")


@main.command()
@click.argument("target", metavar="PID | --run -- CMD [ARGS]...", nargs=-1)
@click.option(
    "--load",
    "load",
    required=True,
    metavar="LOCUSTFILE|CMD",
    help="A locustfile (*.py: locust runs it headless), or a load command with {users} and "
    "{duration} (and {host}), e.g. 'wrk -t2 -c{users} -d{duration}s {host}/'.",
)
@click.option("--host", default=None, help="The service's base URL (locust --host, {host}).")
@click.option(
    "--steps",
    default="1,2,4,8,16,32",
    show_default=True,
    help="Concurrent users per step, rising.",
)
@click.option(
    "--step-duration",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds measured (and captured) per step; for a real service 60 or more.",
)
@click.option(
    "--warmup",
    type=float,
    default=5.0,
    show_default=True,
    help="Seconds of load before each step's window; their figures are discarded.",
)
@click.option("--sla-p99", type=float, default=None, metavar="MS", help="The P99 SLA in ms.")
@click.option(
    "--peak-qps",
    type=float,
    default=None,
    help="Peak QPS to plan for: replicas at the safe QPS per instance, plus one.",
)
@click.option("--run", "run_", is_flag=True, help="Start the service: the command after --.")
@click.option(
    "--vary",
    default=None,
    metavar="NAME=V1,V2",
    help="With --run: the whole sweep per value; {NAME} in the command is replaced, else "
    "NAME=value is set in its environment. The first value is the baseline.",
)
@click.option(
    "--startup",
    type=float,
    default=None,
    help="With --run: the longest wait for --host to accept connections (default 30 s; 3 s "
    "without --host).",
)
@click.option(
    "--grace",
    type=float,
    default=5.0,
    show_default=True,
    help="With --run: SIGTERM to the service, SIGKILL this many seconds later.",
)
@click.option(
    "--load-format",
    default="auto",
    show_default=True,
    help="How to read a load command's output: wrk, json (docs/sweep.md), auto.",
)
@click.option(
    "--out", "-o", type=click.Path(path_type=Path), default=None, help="Sweep directory to create."
)
@click.option(
    "--collectors",
    default=None,
    metavar="LIST",
    help=f"Collectors per step (default: all this host supports). Known: {', '.join(COLLECTORS)}.",
)
@click.option("--rate", "-r", type=int, default=None, help="Stack samples per second.")
@click.option(
    "--max-bundle-mb", type=int, default=1024, show_default=True, help="Disk budget per step."
)
@click.option("--follow/--no-follow", default=True, show_default=True,
              help="Capture the busiest Python child of a wrapper.")  # fmt: skip
@click.option("--format", "formats", default=",".join(formats_of("sweep")), show_default=True,
              help="Sweep reports to write.")  # fmt: skip
@rules_option
@click.option("--json", "as_json", is_flag=True, help="Print the sweep report's JSON on stdout.")
def sweep(
    target: tuple[str, ...],
    load: str,
    host: str | None,
    steps: str,
    step_duration: float,
    warmup: float,
    sla_p99: float | None,
    peak_qps: float | None,
    run_: bool,
    vary: str | None,
    startup: float | None,
    grace: float,
    load_format: str,
    out: Path | None,
    collectors: str | None,
    rate: int | None,
    max_bundle_mb: int,
    follow: bool,
    formats: str,
    rules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Raise the load step by step, capture the service at each step, find the knee.

    \b
    At each step (--steps concurrent users) the load generator warms up for --warmup
    seconds, then runs for --step-duration seconds while diagnose captures the service; the
    generator's QPS and P50/P95/P99 for that window, its own CPU, and the step's verdict go
    into one row. Then: the knee (where QPS stops growing and P99 bends), what changed
    across it (a comparison of the two steps), and what to configure: the concurrency to
    serve at, the SLA-derived setting, the safe QPS per instance (x0.7), replicas for
    --peak-qps (+1 for failover). With --run --vary, the whole sweep per setting and the best.

    \b
    The load generator and a started service are stopped on every exit. Exit codes: 0 every
    step measured; 5 a step failed, or the sweep was interrupted (its report covers the
    steps done); 2 bad options; 3 no such PID, or the service did not start; 10 the load
    generator is missing or failed at the first step.
    """
    pid, argv = _target(target, run_)
    plan = SweepPlan(
        out=out or _default_out(pid, argv),
        load=parse_load(load, host, load_format),
        steps=parse_steps(steps),
        settings=settings_for(parse_vary(vary) if vary else None),
        options=make_options(step_duration, rate, None, False, True, collectors, max_bundle_mb),
        step_duration=step_duration,
        warmup=warmup,
        pid=pid,
        run_argv=argv,
        vary=parse_vary(vary) if vary else None,
        sla_p99_ms=sla_p99,
        peak_qps=peak_qps,
        startup=startup,
        grace=grace,
        follow=follow,
        rules_dirs=rules_dirs,
        command=sys.argv,
    )
    fmts = parse_formats(formats, "sweep")
    progress = Progress()
    runner = Sweep(plan, progress, _step_printer(len(plan.settings) > 1, progress, as_json))
    click.echo(
        f"diagnose sweep: {count(len(plan.steps), 'step')} ({', '.join(map(str, plan.steps))} users) x "
        f"{runner.driver.window(step_duration):g} s after a {warmup:g} s warm-up each, "
        f"{count(len(plan.settings), 'setting')}, load by {plan.load.tool}; into {plan.out}",
        err=True,
    )
    record = _run(runner, fmts, progress)
    model, paths = write_sweep_reports(plan.out, fmts, rules_dirs, progress=progress)
    progress.done()
    if as_json:
        click.echo(json.dumps(model, indent=1))
    else:
        main_path = paths.get("html") or next(iter(paths.values()))
        click.echo("\n".join(fit(render_sweep_summary(model, str(main_path)).splitlines())))
    if sweep_is_partial(record):
        sys.exit(int(ExitCode.PARTIAL))


def _step_printer(
    multi: bool, progress: Progress, as_json: bool
) -> Callable[[Setting, dict[str, Any], Report | None], None]:
    """One table row per finished step (the header before the first): on stderr with
    --json, whose stdout is the JSON alone."""
    header_done = [False]

    def on_step(setting: Setting, step: dict[str, Any], report: Report | None) -> None:
        progress.done()
        if not header_done[0]:
            click.echo(table_header(multi), err=as_json)
            header_done[0] = True
        click.echo(step_line(step, report, setting.name if multi else None), err=as_json)

    return on_step


def _run(runner: Sweep, fmts: list[str], progress: Progress) -> dict[str, Any]:
    """Run the sweep; on an error, report the steps measured (never lost), then fail."""
    try:
        record = runner.run()
    except DiagnoseError:
        progress.done()
        if runner.any_figures:
            with contextlib.suppress(DiagnoseError):
                write_sweep_reports(runner.plan.out, fmts, runner.plan.rules_dirs)
        raise
    progress.done()
    return record
