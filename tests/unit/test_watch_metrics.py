"""diagnose watch --metrics: the exposition of a real report, parsed back as Prometheus
reads it (prometheus_client.parser)."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from diagnose.errors import UsageError
from diagnose.watch.exporter import (
    CATEGORIES,
    GAUGES,
    WatchCollector,
    parse_address,
    registry_for,
    report_series,
    serve,
)
from tests.unit.watchkit import lock_report

HOSTILE_SERVICE = 'svc"} 1\nfake_metric{a="b'


def _families(collector: WatchCollector) -> dict[str, list]:
    text = generate_latest(registry_for(collector)).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}  # type: ignore[misc]


def _samples(fam) -> list[tuple[dict[str, str], float]]:
    return [(dict(s.labels), s.value) for s in fam.samples]


def test_one_capture_is_exposed_with_its_verdict_scores_and_shares():
    # GIVEN the recorded bundle's report (lock/mutex 0.73) WHEN it updates the collector
    report = lock_report()
    c = WatchCollector("svc", 4242)
    c.update(report, 1_800_000_000.0)
    fams = _families(c)
    # THEN every gauge and the counter are there, with their types
    assert set(GAUGES) <= set(fams) and fams["diagnose_captures"].type == "counter"
    assert all(fams[name].type == "gauge" for name in GAUGES)
    (labels, value), *_ = _samples(fams["diagnose_captures"])
    assert labels == {"service": "svc", "pid": "4242"} and value == 1
    # the verdict as an info-style gauge
    assert _samples(fams["diagnose_verdict_info"]) == [
        ({"service": "svc", "pid": "4242", "category": "lock", "kind": "mutex"}, 1.0)
    ]
    # scores: the lock rule's, and 0 for every category that did not fire
    scores = {
        (lb["category"], lb["kind"]): v for lb, v in _samples(fams["diagnose_bottleneck_score"])
    }
    assert scores[("lock", "mutex")] == 0.73
    assert {cat for cat, _ in scores} == set(CATEGORIES)
    assert all(v == 0 for (cat, _), v in scores.items() if cat != "lock")
    # busy shares as ratios, run-queue delay in seconds
    shares = {lb["state"]: v for lb, v in _samples(fams["diagnose_busy_share_ratio"])}
    assert shares["lock"] == report["metrics"]["busy_share_lock"]
    assert set(shares) == {"running", "runnable", "lock", "gil", "io"}
    delays = {(lb["source"], lb["quantile"]): v
              for lb, v in _samples(fams["diagnose_runqueue_delay_seconds"])}  # fmt: skip
    assert delays[("proc", "0.99")] == pytest.approx(report["metrics"]["runq_delay_p99_ms"] / 1000)
    assert delays[("perf", "0.50")] == pytest.approx(
        report["metrics"]["sched_runq_delay_p50_ms"] / 1000
    )
    one = {n: _samples(fams[n])[0][1] for n in (
        "diagnose_process_cpu_cores", "diagnose_self_cpu_cores", "diagnose_migrations_per_second",
        "diagnose_capture_duration_seconds", "diagnose_last_capture_timestamp_seconds")}  # fmt: skip
    assert one == {
        "diagnose_process_cpu_cores": report["metrics"]["process_cpu_cores"],
        "diagnose_self_cpu_cores": report["metrics"]["tool_cpu_cores"],
        "diagnose_migrations_per_second": report["metrics"]["migrations_per_s"],
        "diagnose_capture_duration_seconds": report["capture"]["duration_actual"],
        "diagnose_last_capture_timestamp_seconds": 1_800_000_000.0,
    }


def test_a_metric_not_measured_has_no_series_and_the_next_capture_replaces_the_last():
    report = lock_report()
    c = WatchCollector("svc", 1)
    c.update(report, None)
    # GIVEN a second capture whose run-queue delays were not measured and whose verdict is idle
    report["metrics"].update(runq_delay_p50_ms=None, runq_delay_p99_ms=None,
                             sched_runq_delay_p50_ms=None, sched_runq_delay_p99_ms=None)  # fmt: skip
    report["verdict"].update(primary="idle", kind=None)
    c.update(report, None)
    fams = _families(c)
    # THEN no delay series, one verdict (the new one), and two captures counted
    assert _samples(fams["diagnose_runqueue_delay_seconds"]) == []
    assert [lb["category"] for lb, _ in _samples(fams["diagnose_verdict_info"])] == ["idle"]
    assert _samples(fams["diagnose_captures"])[0][1] == 2


def test_before_any_capture_only_the_counter_has_a_value():
    fams = _families(WatchCollector("svc", 1))
    assert _samples(fams["diagnose_captures"])[0][1] == 0
    assert all(_samples(fams[n]) == [] for n in GAUGES)


def test_a_hostile_service_name_stays_one_label_value():
    c = WatchCollector(HOSTILE_SERVICE, 1)
    c.update(lock_report(), None)
    fams = _families(c)
    assert "fake_metric" not in fams
    assert {lb["service"] for lb, _ in _samples(fams["diagnose_verdict_info"])} == {HOSTILE_SERVICE}


def test_series_of_a_report_are_a_pure_function():
    report = lock_report()
    assert report_series(report) == report_series(report)
    assert report_series(report)["diagnose_last_capture_timestamp_seconds"] == []


@pytest.mark.parametrize(
    ("text", "address"),
    [("127.0.0.1:9464", ("127.0.0.1", 9464)), (":9464", ("127.0.0.1", 9464)),
     ("[::1]:80", ("::1", 80)), ("0.0.0.0:1", ("0.0.0.0", 1))],
)  # fmt: skip
def test_addresses(text, address):
    assert parse_address(text) == address


@pytest.mark.parametrize("text", ["9464", "host", "h:0", "h:65536", "a:b:1", "[::1]"])
def test_bad_addresses(text):
    with pytest.raises(UsageError, match="HOST:PORT"):
        parse_address(text)


def test_the_server_answers_on_loopback_and_a_taken_port_is_a_usage_error():
    c = WatchCollector("svc", 7)
    c.update(lock_report(), None)
    server = serve(c, "127.0.0.1", 0)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            body = resp.read().decode()
        assert (
            'diagnose_verdict_info{category="lock",kind="mutex",pid="7",service="svc"} 1.0' in body
        )
        with pytest.raises(UsageError, match="cannot listen"):
            serve(c, "127.0.0.1", port)
    finally:
        server.shutdown()
        server.server_close()
