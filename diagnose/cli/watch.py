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
from diagnose.watch.drift import latency_words, parse_drift
from diagnose.watch.duration import format_duration, parse_duration
from diagnose.watch.exporter import parse_address
from diagnose.watch.latency import LatencyQuery

GIB = 1024**3


def _target(target: tuple[str, ...], run: bool, warmup: float, grace: float) -> Target:
    if run:
        if not target:
            raise UsageError("--run needs the command after --: diagnose watch --run -- CMD ARGS")
        return Target(argv=target, warmup=warmup, grace=grace)
    if len(target) != 1 or not target[0].isdigit():
        raise UsageError("give the service's PID (diagnose watch PID), or --run -- CMD ARGS")
    return Target(pid=int(target[0]))


def _store_budget(max_store_gb: float) -> tuple[int, int]:
    """--max-store-gb in bytes, and the budget of one capture (MB): half the store at most
    (attach's own budget is 1 GiB)."""
    if not (0 < max_store_gb <= 1024):
        raise UsageError(
            f"--max-store-gb must be more than 0 and at most 1024, not {max_store_gb:g}"
        )
    max_store = int(max_store_gb * GIB)
    return max_store, max(1, min(1024, max_store // 2 // 1024**2))


def _start_line(
    pid: int, name: str, plan: WatchPlan, store: Path, address: tuple[str, int] | None
) -> str:
    where = f"; metrics on http://{address[0]}:{address[1]}/metrics" if address else ""
    if plan.latency is not None:
        where += f"; P99 from Prometheus at {plan.latency.shown}, drift above +{plan.drift:.0%}"
    return (
        f"diagnose watch: PID {pid} ({term(name, 80)}), a "
        f"{format_duration(plan.options.duration)} capture every "
        f"{format_duration(plan.every_s)} into {term(store, 300)}{where}"
    )


def _echo_stored(s: Stored, store: Path) -> None:
    """A capture's line on stdout; the warning, if any (the P99 not read), on stderr."""
    row = s.row
    words = latency_words(row.p99_ms, row.p99_baseline_ms, row.drift, row.drift_from) if row else ""
    page = store / row.path / "compare.html" if row and row.comparison else None
    click.echo(stored_line(row.to_dict() if row else None, len(s.removed), s.note, words,
                           term(page, 600) if page else "", s.changed))  # fmt: skip
    if s.warning:
        click.echo(f"diagnose watch: warning: {term(s.warning, 400)}", err=True)


def _latency(prometheus: str | None, query: str | None) -> LatencyQuery | None:
    """--prometheus and --latency-query, checked, and the query tried once: a query
    Prometheus rejects is exit 2 now; Prometheus unreachable is a warning per capture."""
    if prometheus is None and query is None:
        return None
    if prometheus is None or query is None:
        raise UsageError("--prometheus URL and --latency-query PROMQL go together")
    latency = LatencyQuery.from_options(prometheus, query)
    latency.check()
    return latency


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
@click.option("--prometheus", default=None, metavar="URL",
              help="Read the service's P99 at each capture from this Prometheus (http://HOST:9090).")  # fmt: skip
@click.option("--latency-query", default=None, metavar="PROMQL",
              help="The P99 in seconds, one series: histogram_quantile(0.99, sum by (le) (rate(X_bucket[1m]))).")  # fmt: skip
@click.option("--drift", "drift_pct", default="20%", show_default=True, metavar="PCT",
              help="A P99 this much above the last day's median keeps the capture whole, compared.")  # fmt: skip
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
@click.option("--sched-events", type=int, default=None, metavar="N",
              help="Scheduler events converted per capture (as attach's): fewer make a cheaper watch.")  # fmt: skip
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
    prometheus: str | None,
    latency_query: str | None,
    drift_pct: str,
    count: int | None,
    run_: bool,
    warmup: float,
    grace: float,
    rate: int | None,
    cpu_budget: float | None,
    sched_events: int | None,
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
    --prometheus, --latency-query: a P99 more than --drift above the last day's median keeps
    the capture whole, compared with the last capture before the drift (compare.html).

    \b
    Ctrl-C or SIGTERM ends the watch: a capture in progress ends early, is judged and
    stored, then diagnose exits 0. The target exiting ends it with exit code 3 (with
    --run: the command exited; it is not restarted).
    """
    every_s, capture_s = parse_duration(every, "--every"), parse_duration(capture_for, "--capture")
    if every_s < capture_s:
        raise UsageError(f"--every ({every}) must be at least --capture ({capture_for})")
    if count is not None and count < 1:
        raise UsageError(f"--count must be 1 or more, not {count}")
    max_store, bundle_mb = _store_budget(max_store_gb)
    options = make_options(capture_s, rate, None, False, True, collectors, bundle_mb,
                           cpu_budget=cpu_budget, sched_events=sched_events)  # fmt: skip
    plan = WatchPlan(every_s=every_s, options=options, keep_s=parse_duration(keep, "--keep"),
                     max_store_bytes=max_store, follow=follow, rules_dirs=rules_dirs,
                     command=tuple(sys.argv), count=count, latency=_latency(prometheus, latency_query),
                     drift=parse_drift(drift_pct))  # fmt: skip
    address = parse_address(metrics) if metrics else None
    progress = Progress()

    def started(pid: int, name: str) -> None:
        click.echo(_start_line(pid, name, plan, store, address), err=True)

    def stored(s: Stored) -> None:
        progress.done()
        _echo_stored(s, store)

    end = watch_target(plan, store, _target(target, run_, warmup, grace), service, address,
                       stored, started, progress)  # fmt: skip
    progress.done()
    done = f"watch ended after {end.captures} capture(s); store: {term(store, 300)}"
    if end.reason == "target_exited":
        raise TargetError(f"the target exited ({term(end.detail, 300)}); {done}")
    click.echo(f"diagnose: {done}" + (f" ({end.detail})" if end.detail else ""), err=True)
