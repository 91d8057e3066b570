"""Options and helpers shared by several commands."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from diagnose.app.report import Diagnosis, report_json, write_reports
from diagnose.app.reporters import formats_of
from diagnose.bundle.manifest import TABLE_FORMATS
from diagnose.collect.base import PERF_SCOPES, CaptureOptions
from diagnose.collect.registry import COLLECTORS, parse_collectors, with_collector
from diagnose.collect.selection import parse_workers
from diagnose.collect.session import CaptureResult
from diagnose.errors import ExitCode, OutputError, UsageError
from diagnose.escape import term
from diagnose.render.terminal import render_summary

rules_option = click.option(
    "--rules",
    "rules_dirs",
    type=click.Path(path_type=Path, file_okay=False),
    multiple=True,
    help="A directory of extra rule files (*.toml); a rule with the same id replaces the built-in one. Repeatable.",
)


def bundle_dir_callback(
    _ctx: click.Context, _param: click.Parameter, value: Path | None
) -> Path | None:
    if value is not None and str(value) == "-":
        raise UsageError(
            "-o is the bundle's directory, which cannot be stdout; --json prints the report "
            "on stdout"
        )
    return value


bundle_out_option = click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    callback=bundle_dir_callback,
    help="Bundle directory to create (default: ./diagnose-PID-TIMESTAMP); an existing one "
    "must be empty, yours, and writable by you alone (it is made 0700).",
)


F = TypeVar("F", bound=Callable[..., Any])


#: the capture options, outermost first (applied by capture_options)
_CAPTURE_OPTS = [
    click.option(
        "--duration",
        "-d",
        type=float,
        default=10.0,
        show_default=True,
        help="Seconds to capture.",
    ),
    click.option(
        "--rate",
        "-r",
        type=int,
        default=None,
        help="Stack samples per second (py-spy, its GIL sampler, perf). Default: 100, "
        "lowered for py-spy and the GIL sampler to fit --cpu-budget (their cost grows "
        "with threads x rate). Given, py-spy keeps it.",
    ),
    click.option(
        "--proc-rate",
        type=int,
        default=None,
        help="Thread-state ticks per second (/proc). Default: 20, lowered to fit --cpu-budget.",
    ),
    click.option(
        "--cpu-budget",
        type=float,
        default=None,
        metavar="CORES",
        help="diagnose's own CPU while capturing, in cores: the samplers' rates are "
        "lowered to fit it (the report shows what was lowered and what diagnose used). "
        "Default: 2.5% of the cores the target may use, at least 0.05; 0: no budget "
        "(docs/performance.md).",
    ),
    click.option(
        "--native/--no-native",
        default=False,
        show_default=True,
        help="py-spy --native: native frames from py-spy (blocking mode, costs the target 16-32%). Native stacks come from perf by default, at no measurable cost.",
    ),
    click.option(
        "--nonblocking/--blocking",
        default=True,
        show_default=True,
        help="py-spy mode. Blocking stops every thread at every sample (3-15% cost; 76% on a 65-thread service, docs/performance.md).",
    ),
    click.option(
        "--collectors",
        default=None,
        metavar="LIST",
        help=f"Comma-separated collectors to run (default: all this host supports). Known: {', '.join(COLLECTORS)}.",
    ),
    click.option(
        "--false-sharing",
        is_flag=True,
        default=False,
        help="Also find cache lines written by several threads (false and true sharing) "
        "from cpu-clock samples with user registers: no PMU needed (collector "
        "false_sharing, x86-64; docs/design.md).",
    ),
    click.option(
        "--max-bundle-mb",
        type=int,
        default=1024,
        show_default=True,
        help="Disk budget of the bundle; the capture stops early when it is reached.",
    ),
    click.option(
        "--workers",
        default="all",
        show_default=True,
        metavar="all|busiest|PID,...",
        help="Of a pre-fork server's workers (gunicorn, uvicorn --workers, a multiprocessing "
        "pool): all (the 4 busiest, one capture each, sharing the CPU and disk budgets; "
        "the report judges each and gives one verdict for the service), busiest, or the "
        "PIDs given.",
    ),
    click.option(
        "--perf-scope",
        type=click.Choice(PERF_SCOPES),
        default="auto",
        show_default=True,
        help="perf's on-CPU sampler: auto records the CPUs the target may run on where "
        "diagnose may (no cost at the target's context switches; the recording holds what "
        "else ran there until it is converted), threads follows the target's threads alone.",
    ),
    click.option(
        "--sched-events",
        type=int,
        default=None,
        metavar="N",
        help="Scheduler events converted (perf_sched: run-queue delay, off-CPU and futex "
        "stacks), the earliest; the trace stops once it holds them. Default: 3,000 per "
        "second of --duration, at least 30,000, shared by a service's workers' captures.",
    ),
    click.option(
        "--tables",
        type=click.Choice(TABLE_FORMATS),
        default="auto",
        show_default=True,
        help="Format of the large tables once captured: auto rewrites those of 8 MiB and more "
        "as Parquet (a quarter of the size), csv keeps every table CSV (docs/bundle.md).",
    ),
]


def capture_options(f: F) -> F:
    """The capture's options (attach, run), handed to the command as one ``options:
    CaptureOptions`` (bad values are refused here, exit 2)."""

    @functools.wraps(f)
    def command(*args: Any, **kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in inspect.signature(make_options).parameters}
        return f(*args, options=make_options(**given), **kwargs)

    wrapped: Any = command
    for o in reversed(_CAPTURE_OPTS):
        wrapped = o(wrapped)
    return wrapped  # type: ignore[no-any-return]


def after_capture_options(f: F) -> F:
    """--follow, --format, --rules and --json: what attach and run share after the capture."""
    opts = [
        click.option(
            "--follow/--no-follow",
            default=True,
            show_default=True,
            help="When the process only supervises others (a shell or exec wrapper, a "
            "gunicorn/uvicorn/celery/torchrun master, a multiprocessing parent whose children "
            "run its program), capture its busiest worker instead; a process that serves "
            "itself is kept, its helper children are left out (docs/playbook.md).",
        ),
        click.option(
            "--format",
            "formats",
            default=",".join(formats_of("report")),
            show_default=True,
            help="Reports to write into the bundle.",
        ),
        rules_option,
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="Print the report's JSON on stdout instead of the summary.",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def make_options(
    duration: float,
    rate: int | None,
    proc_rate: int | None,
    native: bool,
    nonblocking: bool,
    collectors: str | None,
    max_bundle_mb: int,
    false_sharing: bool = False,
    cpu_budget: float | None = None,
    tables: str = "auto",
    workers: str = "all",
    perf_scope: str = "auto",
    sched_events: int | None = None,
) -> CaptureOptions:
    if max_bundle_mb < 1:
        raise UsageError(f"--max-bundle-mb must be at least 1 (MiB), not {max_bundle_mb}")
    if cpu_budget is not None and not (0 <= cpu_budget <= 1024):
        raise UsageError(f"--cpu-budget must be 0 (no budget) to 1024 cores, not {cpu_budget:g}")
    if sched_events is not None and not (1000 <= sched_events <= 10_000_000):
        raise UsageError(f"--sched-events must be 1000 to 10000000 events, not {sched_events}")
    try:
        chosen = parse_workers(workers)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    names = parse_collectors(collectors)
    if false_sharing:
        names = with_collector(names, "false_sharing")
    return CaptureOptions(
        duration=duration,
        rate=100 if rate is None else rate,
        rate_chosen=rate is not None,
        proc_rate=20 if proc_rate is None else proc_rate,
        proc_rate_chosen=proc_rate is not None,
        cpu_budget=cpu_budget,
        native=native,
        nonblocking=nonblocking,
        collectors=names,
        max_bundle_bytes=max_bundle_mb * 1024 * 1024,
        tables=tables,
        workers=chosen,
        perf_scope=perf_scope,
        sched_events=sched_events,
    )


class Progress:
    """One updating line on a terminal; nothing otherwise (logs stay clean)."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.width = 0

    def __call__(self, text: str) -> None:
        if not self.enabled:
            return
        line = text[:110]
        pad = max(0, self.width - len(line))
        sys.stderr.write("\r" + line + " " * pad)
        sys.stderr.flush()
        self.width = len(line)

    def done(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
            self.width = 0


def report_capture(
    result: CaptureResult,
    formats: list[str],
    rules_dirs: tuple[Path, ...],
    as_json: bool,
    notes: Sequence[str] = (),
) -> None:
    """After a capture: write its reports, print the summary (or the JSON), exit 5 if partial.

    ``notes`` are extra lines for the terminal (the JSON carries the same in the report).
    """
    if as_json and result.target.note:  # the summary says it otherwise: not twice
        click.echo(f"diagnose: {term(result.target.note, 1200)}", err=True)
    source = result.writer.dir.dup() if result.writer is not None else result.bundle
    cut_short = _cut_short_by_disk(result)

    def verdict_first(d: Diagnosis, paths: dict[str, Path]) -> None:
        # printed before the HTML page is rendered: the verdict is what the user waits for
        main_path = paths.get("html") or next(iter(paths.values()))
        click.echo(render_summary(d.report, str(main_path), color=sys.stdout.isatty()))
        for line in notes:
            click.echo(term(line, 1000))
        click.echo(f"Bundle: {term(result.bundle, 1000)}")

    d, _ = write_reports(source, formats, None, rules_dirs, None if as_json else verdict_first)
    if as_json and not cut_short:  # stdout holds the JSON only with exit codes 0 and 5
        click.echo(report_json(d.report))
    if cut_short:
        raise OutputError(cut_short)
    if result.partial:
        sys.exit(int(ExitCode.PARTIAL))


def report_bundle_only(result: CaptureResult) -> None:
    """``attach --no-report``: where the bundle is; exit codes as with a report."""
    if result.target.note:
        click.echo(f"diagnose: {term(result.target.note, 1200)}", err=True)
    click.echo(f"Bundle: {term(result.bundle, 1000)}")
    cut_short = _cut_short_by_disk(result)
    if cut_short:
        raise OutputError(cut_short)
    if result.partial:
        sys.exit(int(ExitCode.PARTIAL))


def _cut_short_by_disk(result: CaptureResult) -> str:
    """Why the disk ended the capture early (exit code 6), or ""."""
    capture = result.manifest.capture
    ended_by = capture.ended_by
    if ended_by not in ("disk_budget", "disk_full"):
        return ""
    why = (
        "the bundle reached --max-bundle-mb" if ended_by == "disk_budget" else "the disk filled up"
    )
    return (
        f"the capture stopped after {capture.duration_actual or 0:.1f} s of "
        f"{capture.duration_requested:g} s: {why}; the bundle and its report "
        f"are kept in {result.bundle}"
    )
