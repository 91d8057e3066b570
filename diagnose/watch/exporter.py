"""``diagnose watch --metrics HOST:PORT``: the last capture's figures for Prometheus.

:func:`report_series` turns one report into named series (a pure function, tested on the
recorded bundle's report); :class:`WatchCollector` holds the latest of them and yields
them to prometheus_client, which serves ``/metrics`` in the text exposition format. A
scrape sees one capture's series or the next's, never a mix (one lock, swapped whole).
Names follow Prometheus's conventions: the ``diagnose_`` prefix, base units (seconds,
ratios 0-1; CPU in cores, i.e. CPU-seconds per second), ``_total`` for the counter.
docs/watch.md lists them with alert rules.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from diagnose.errors import UsageError

#: the verdict's categories (rules/): each has a score series, 0 while none of its rules fired
CATEGORIES = ("preprocess", "lock", "scheduling", "compute", "memory_bandwidth", "io", "idle")
BUSY_STATES = ("running", "runnable", "lock", "gil", "io")

#: name -> help text of each gauge, in the order they are exposed
GAUGES = {
    "diagnose_bottleneck_score": "Score (0-1) of the best finding of each bottleneck category "
    "and kind in the last capture; 0 with an empty kind where none of the category fired.",
    "diagnose_verdict_info": "The last capture's verdict: 1, labelled with its category and kind.",
    "diagnose_verdict_confidence_ratio": "Confidence (0-1) of the last capture's verdict.",
    "diagnose_busy_share_ratio": "Share (0-1) of the target's busy thread time in each state "
    "(running, runnable, lock, gil, io): metrics busy_share_*.",
    "diagnose_idle_share_ratio": "Share (0-1) of all the target's thread time spent idle, "
    "waiting for work (metric idle_share; its denominator is all time, not busy time).",
    "diagnose_runqueue_delay_seconds": "Run-queue delay quantiles: source proc (per timeslice, "
    "/proc schedstat) or perf (per scheduler event).",
    "diagnose_context_switches_per_second": "Context switches of the target's threads per "
    "second, voluntary (blocking) or involuntary (preempted).",
    "diagnose_migrations_per_second": "Moves of the target's threads between CPUs per second.",
    "diagnose_process_cpu_cores": "CPU the target used per second of the capture (cores).",
    "diagnose_self_cpu_cores": "CPU diagnose and its helpers used per second of the capture.",
    "diagnose_capture_duration_seconds": "Length of the last capture's measured window.",
    "diagnose_last_capture_timestamp_seconds": "Unix time the last capture started.",
    "diagnose_latency_p99_seconds": "The service's P99 read from Prometheus at the last "
    "capture (--latency-query).",
    "diagnose_latency_baseline_seconds": "The median of the last day's P99 readings before the "
    "last capture (at least 3 readings).",
}
CAPTURES_TOTAL = "diagnose_captures"  # exposed as diagnose_captures_total
CAPTURES_HELP = "Captures diagnose watch made and judged."

Labels = dict[str, str]
Series = dict[str, list[tuple[Labels, float]]]


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if x == x and abs(x) != float("inf") else None


def _scores(findings: Iterable[Mapping[str, Any]]) -> list[tuple[Labels, float]]:
    best: dict[tuple[str, str], float] = {}
    for f in findings:
        score = _num(f.get("score"))
        if f.get("advisory") or score is None:
            continue
        key = (str(f.get("category") or "unknown"), str(f.get("kind") or ""))
        best[key] = max(best.get(key, 0.0), score)
    for cat in CATEGORIES:
        if not any(c == cat for c, _ in best):
            best[(cat, "")] = 0.0
    return [({"category": c, "kind": k}, v) for (c, k), v in sorted(best.items())]


def report_series(
    report: Mapping[str, Any],
    started_unix: float | None = None,
    latency: tuple[float | None, float | None] = (None, None),
) -> Series:
    """Each gauge's series (labels besides service and pid, value) from one report and the
    service's P99 and its baseline (ms); a metric that was not measured (null) has no
    series."""
    m = report.get("metrics") or {}
    v = report.get("verdict") or {}
    cap = report.get("capture") or {}
    out: Series = {name: [] for name in GAUGES}

    def put(name: str, labels: Labels, value: Any, scale: float = 1.0) -> None:
        x = _num(value)
        if x is not None:
            out[name].append((labels, x * scale))

    out["diagnose_bottleneck_score"] = _scores(report.get("findings") or [])
    verdict = {"category": str(v.get("primary") or "unknown"), "kind": str(v.get("kind") or "")}
    put("diagnose_verdict_info", verdict, 1)
    put("diagnose_verdict_confidence_ratio", {}, v.get("confidence"))
    for state in BUSY_STATES:
        put("diagnose_busy_share_ratio", {"state": state}, m.get(f"busy_share_{state}"))
    put("diagnose_idle_share_ratio", {}, m.get("idle_share"))
    for source, prefix in (("proc", "runq_delay"), ("perf", "sched_runq_delay")):
        for q in ("50", "99"):
            labels = {"quantile": f"0.{q}", "source": source}
            put("diagnose_runqueue_delay_seconds", labels, m.get(f"{prefix}_p{q}_ms"), 1e-3)
    for kind in ("voluntary", "involuntary"):
        put("diagnose_context_switches_per_second", {"type": kind},
            m.get(f"ctx_switches_{kind}_per_s"))  # fmt: skip
    put("diagnose_migrations_per_second", {}, m.get("migrations_per_s"))
    put("diagnose_process_cpu_cores", {}, m.get("process_cpu_cores"))
    put("diagnose_self_cpu_cores", {}, m.get("tool_cpu_cores"))
    put("diagnose_capture_duration_seconds", {}, cap.get("duration_actual"))
    put("diagnose_last_capture_timestamp_seconds", {}, started_unix)
    put("diagnose_latency_p99_seconds", {}, latency[0], 1e-3)
    put("diagnose_latency_baseline_seconds", {}, latency[1], 1e-3)
    return out


@dataclass(eq=False)  # the registry keys its collectors by identity
class WatchCollector(Collector):
    """The latest capture's series for one watched service, and the capture count."""

    service: str
    pid: int
    series: Series = field(default_factory=dict)
    captures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def update(
        self,
        report: Mapping[str, Any],
        started_unix: float | None,
        latency: tuple[float | None, float | None] = (None, None),
    ) -> None:
        series = report_series(report, started_unix, latency)
        with self.lock:
            self.series = series
            self.captures += 1

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            series, captures = self.series, self.captures
        base = {"service": self.service, "pid": str(self.pid)}
        for name, doc in GAUGES.items():
            rows = series.get(name, [])
            keys = list(rows[0][0]) if rows else []
            fam = GaugeMetricFamily(name, doc, labels=[*base, *keys])
            for labels, value in rows:
                fam.add_metric([*base.values(), *(labels[k] for k in keys)], value)
            yield fam
        total = CounterMetricFamily(CAPTURES_TOTAL, CAPTURES_HELP, labels=list(base))
        total.add_metric(list(base.values()), captures)
        yield total


def registry_for(collector: WatchCollector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


_ADDRESS = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\[\]]*)):(?P<port>\d{1,5})")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9464``; ``:9464`` is 127.0.0.1): (host, port)."""
    m = _ADDRESS.fullmatch(text.strip())
    port = int(m.group("port")) if m else -1
    if not m or not (0 < port < 65536):
        raise UsageError(f"--metrics takes HOST:PORT, e.g. 127.0.0.1:9464, not {text!r}")
    return m.group("v6") or m.group("host") or "127.0.0.1", port


def serve(collector: WatchCollector, host: str, port: int) -> WSGIServer:
    """Serve ``/metrics`` on ``host:port`` from a daemon thread; ``shutdown()`` stops it."""
    try:
        server, _thread = start_http_server(port, host, registry_for(collector))
    except OSError as exc:
        raise UsageError(
            f"--metrics {host}:{port}: cannot listen there: {exc.strerror or exc}"
        ) from None
    return server
