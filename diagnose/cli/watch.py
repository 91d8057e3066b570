"""diagnose watch PID | --run -- CMD: a short capture every few minutes, judged and kept in a
store, with Prometheus metrics (docs/watch.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from diagnose.app.watch import Stored, Target, WatchPlan
from diagnose.app.watch import watch as watch_target
from diagnose.cli.common import Progress, make_options, rules_option
from diagnose.cli.group import main
from diagnose.collect.registry import COLLECTORS
from diagnose.errors import TargetError, UsageError
from diagnose.escape import term
from diagnose.render.watch import stored_line
from diagnose.watch.duration import format_duration, parse_duration
from diagnose.watch.exporter import parse_address

GIB = 1024**3


def _target(target: tuple[str, ...], run: bool, warmup: float, grace: float) -> Target:
    if run:
        if not target:
            raise UsageError("--run needs the command after --: diagnose watch --run -- CMD ARGS")
        return Target(argv=target, warmup=warmup, grace=grace)
    if len(target) != 1 or not target[0].isdigit():
        raise UsageError("give the service's PID (diagnose watch PID), or --run -- CMD ARGS")
    return Target(pid=int(target[0]))


@main.command()
@click.argument("target", metavar="PID | --run -- CMD [ARGS]...", nargs=-1)
@click.option("--every", default="10m", show_default=True,
              help="Start a capture this often (15, 15s, 10m, 2h).")  # fmt: skip
@click.option("--capture", "capture_for", default="10s", show_default=True,
              help="Length of each capture.")  # fmt: skip
@click.option("--store", type=click.Path(path_type=Path), default=Path("diagnose-watch"),
              show_default=True, help="The store: created 0700, or one of yours (mode 0700).")  # fmt: skip
@click.option("--keep", default="7d", show_default=True,
              help="Delete captures older than this (the newest is always kept).")  # fmt: skip
@click.option("--max-store-gb", type=float, default=1.0, show_default=True,
              help="Delete the oldest captures while the store holds more.")  # fmt: skip
@click.option("--metrics", default=None, metavar="HOST:PORT",
              help="Serve Prometheus metrics on http://HOST:PORT/metrics (e.g. 127.0.0.1:9464).")  # fmt: skip
@click.option("--service", default=None,
              help="The service label of the metrics (default: the process's command name).")  # fmt: skip
@click.option("--count", type=int, default=None, help="Stop after this many captures.")
@click.option("--run", "run_", is_flag=True,
              help="Start the command after -- and watch it; the watch ends when it exits.")  # fmt: skip
@click.option("--warmup", type=float, default=1.0, show_default=True,
              help="With --run: seconds before the first capture.")  # fmt: skip
@click.option("--grace", type=float, default=5.0, show_default=True,
              help="With --run: SIGTERM to the command at the end, SIGKILL this much later.")  # fmt: skip
@click.option("--rate", "-r", type=int, default=None, help="Stack samples per second.")
@click.option("--cpu-budget", type=float, default=None, metavar="CORES",
              help="diagnose's CPU while capturing, in cores (as attach's).")  # fmt: skip
@click.option("--collectors", default=None, metavar="LIST",
              help=f"Collectors per capture (default: all this host supports). Known: {', '.join(COLLECTORS)}.")  # fmt: skip
@click.option("--follow/--no-follow", default=True, show_default=True,
              help="Capture the busiest worker of a wrapper or pre-fork master (as attach).")  # fmt: skip
@rules_option
def watch(
    target: tuple[str, ...],
    every: str,
    capture_for: str,
    store: Path,
    keep: str,
    max_store_gb: float,
    metrics: str | None,
    service: str | None,
    count: int | None,
    run_: bool,
    warmup: float,
    grace: float,
    rate: int | None,
    cpu_budget: float | None,
    collectors: str | None,
    follow: bool,
    rules_dirs: tuple[Path, ...],
) -> None:
    """Capture PID for --capture every --every, judge each capture as attach does, keep it in
    --store (an SQLite index and the bundles), and optionally serve Prometheus metrics.

    \b
    A bundle is kept whole when its verdict (category, kind) differs from the capture
    before; otherwise only its report.json is. Captures older than --keep go, then the
    oldest while the store is over --max-store-gb. One line per capture: time, verdict,
    confidence, what was kept. `diagnose history STORE` shows the timeline.

    \b
    Ctrl-C or SIGTERM ends the watch: a capture in progress ends early, is judged and
    stored, then diagnose exits 0. The target exiting ends it with exit code 3 (with
    --run: the command exited; it is not restarted).
    """
    every_s, capture_s = parse_duration(every, "--every"), parse_duration(capture_for, "--capture")
    if every_s < capture_s:
        raise UsageError(f"--every ({every}) must be at least --capture ({capture_for})")
    if not (0 < max_store_gb <= 1024):
        raise UsageError(
            f"--max-store-gb must be more than 0 and at most 1024, not {max_store_gb:g}"
        )
    if count is not None and count < 1:
        raise UsageError(f"--count must be 1 or more, not {count}")
    max_store = int(max_store_gb * GIB)
    # one capture may take half the store at most (attach's own budget is 1 GiB)
    bundle_mb = max(1, min(1024, max_store // 2 // 1024**2))
    plan = WatchPlan(
        every_s=every_s,
        options=make_options(
            capture_s, rate, None, False, True, collectors, bundle_mb, cpu_budget=cpu_budget
        ),
        keep_s=parse_duration(keep, "--keep"),
        max_store_bytes=max_store,
        follow=follow,
        rules_dirs=rules_dirs,
        command=tuple(sys.argv),
        count=count,
    )
    address = parse_address(metrics) if metrics else None
    progress = Progress()

    def started(pid: int, name: str) -> None:
        where = f"; metrics on http://{address[0]}:{address[1]}/metrics" if address else ""
        click.echo(
            f"diagnose watch: PID {pid} ({term(name, 80)}), a {format_duration(capture_s)} "
            f"capture every {format_duration(every_s)} into {term(store, 300)}{where}",
            err=True,
        )

    def stored(s: Stored) -> None:
        progress.done()
        click.echo(stored_line(s.row.to_dict() if s.row else None, len(s.removed), s.note))

    end = watch_target(plan, store, _target(target, run_, warmup, grace), service, address,
                       stored, started, progress)  # fmt: skip
    progress.done()
    done = f"watch ended after {end.captures} capture(s); store: {term(store, 300)}"
    if end.reason == "target_exited":
        raise TargetError(f"the target exited ({term(end.detail, 300)}); {done}")
    click.echo(f"diagnose: {done}" + (f" ({end.detail})" if end.detail else ""), err=True)
