"""Reading load generators' figures: wrk's real output (tests/fixtures/load, recorded against
samples/sweep_pool.py), locust's window (from locust_plugin.py), locust's ``--csv`` statistics
(``locust_stats.csv``: locust 2.47, 2 users for 5 s against sweep_pool.py) and the JSON-line
contract."""

from __future__ import annotations

import json

import pytest

from diagnose.sweep.loadgen import (
    SATURATED_SHARE,
    CpuSample,
    LoadFigures,
    figures_from_json,
    generator_cpu,
    parse_json_line,
    parse_locust_csv,
    parse_locust_window,
    parse_wrk,
    read_stats_file,
)
from tests.conftest import FIXTURES

LOAD = FIXTURES / "load"


def test_wrk_latency_summary():
    f = parse_wrk((LOAD / "wrk_latency.txt").read_text())
    assert f.tool == "wrk" and f.requests == 281 and f.failures == 0
    assert f.seconds == pytest.approx(3.01)
    assert (f.p50_ms, f.p95_ms, f.p99_ms) == (41.41, None, 52.85)  # wrk's summary has no P95
    assert f.mean_ms == pytest.approx(42.74) and f.max_ms == pytest.approx(53.94)
    assert f.qps == pytest.approx(281 / 3.01)


def test_wrk_with_the_report_script_has_p95():
    f = parse_wrk((LOAD / "wrk_script.txt").read_text())
    assert f.requests == 192 and f.seconds == pytest.approx(2.005578)
    assert (f.p50_ms, f.p95_ms, f.p99_ms) == (81.028, 119.457, 124.925)
    assert f.extra["status_errors"] == 0


def test_wrk_non_2xx_are_failures():
    f = parse_wrk((LOAD / "wrk_non2xx.txt").read_text())
    assert f.requests == 3765 and f.failures == 3765
    assert f.qps == 0 and f.error_rate == 1.0
    assert f.errors == [{"error": "non-2xx or 3xx responses", "count": 3765}]
    assert f.p50_ms is None  # no --latency


def test_wrk_socket_errors_and_units():
    text = (
        "  120 requests in 1.50m, 1.00KB read\n"
        "    Latency     1.20s   100.00ms   2.50s   70.00%\n"
        "  Socket errors: connect 0, read 3, write 0, timeout 2\n"
        "     50%  800.00us\n     99%    2.40s\n"
    )
    f = parse_wrk(text)
    assert f.seconds == pytest.approx(90.0)
    assert (f.requests, f.failures) == (125, 5)
    assert f.p50_ms == pytest.approx(0.8) and f.p99_ms == pytest.approx(2400.0)
    assert f.mean_ms == pytest.approx(1200.0) and f.max_ms == pytest.approx(2500.0)


def test_not_wrk_output():
    with pytest.raises(ValueError, match="not wrk's output"):
        parse_wrk("Segmentation fault\n")


def test_locust_window():
    f = parse_locust_window(json.loads((LOAD / "locust_window.json").read_text()))
    assert f.tool == "locust" and f.requests == 309 and f.failures == 0
    assert f.seconds == pytest.approx(4.0476)
    assert (f.p50_ms, f.p95_ms, f.p99_ms) == (97, 190, 260)
    assert f.extra["users_at_start"] == 8 and f.extra["endpoints"][0]["name"] == "/infer"


def test_json_contract_takes_the_last_matching_line():
    # the samples' own stats line fits the contract (requests, seconds, p50_ms, p99_ms)
    out = (
        "starting\n"
        '{"not": "figures"}\n'
        '{"sample": "lock_contention", "threads": 8, "requests": 9522, "seconds": 17.676, '
        '"rps": 538.71, "p50_ms": 7.835, "p99_ms": 110.307}\n'
        "bye\n"
    )
    f = parse_json_line(out, "mytool")
    assert f.tool == "mytool" and f.requests == 9522 and f.p99_ms == 110.307 and f.p95_ms is None
    assert f.extra == {"sample": "lock_contention", "threads": 8, "rps": 538.71}
    prefixed = 'diagnose-load: {"requests": 10, "duration_s": 2, "failures": 1, "tool": "k6"}'
    g = parse_json_line(prefixed)
    assert (g.tool, g.seconds, g.qps, g.error_rate) == ("k6", 2.0, 4.5, 0.1)


@pytest.mark.parametrize(
    ("out", "says"),
    [
        ("nothing here\n", "printed no JSON line"),
        ('{"requests": 10}\n', "needs numbers"),
        ('{"requests": 10, "seconds": 0}\n', "needs numbers"),
        ('{"requests": "ten", "seconds": 3}\n', "needs numbers"),
        ('{"requests": true, "seconds": 3}\n', "needs numbers"),
    ],
)
def test_json_contract_rejects(out, says):
    with pytest.raises(ValueError, match=says):
        parse_json_line(out)


def test_figures_round_trip():
    f = figures_from_json(
        {"requests": 5, "seconds": 1, "p99_ms": 3, "errors": [{"error": "x"}, 1]}, "t"
    )
    assert f.errors == [{"error": "x"}]
    assert LoadFigures.from_dict({**f.to_dict(), "unknown": 1}) == f
    assert LoadFigures("t", 0.0, 0).qps == 0.0 and LoadFigures("t", 1.0, 0).error_rate == 0.0


def test_locust_csv_reads_the_aggregated_row():
    f = parse_locust_csv((LOAD / "locust_stats.csv").read_text())
    assert f.tool == "locust" and f.requests == 44 and f.failures == 0
    assert f.qps == pytest.approx(15.1396, abs=1e-3)  # locust's Requests/s
    assert (f.p50_ms, f.p95_ms, f.p99_ms) == (110, 260, 310)
    assert f.mean_ms == pytest.approx(128.088, abs=1e-3)


def test_locust_csv_without_requests_has_no_percentiles():
    header = (LOAD / "locust_stats.csv").read_text().splitlines()[0]
    row = ",Aggregated,0,0,0,0,0,0,0,0.0,0.0," + ",".join(["N/A"] * 11)
    f = parse_locust_csv(f"{header}\n{row}\n")
    assert (f.requests, f.qps, f.p50_ms, f.p99_ms) == (0, 0.0, 0.0, None)
    with pytest.raises(ValueError, match="no 'Aggregated' row"):
        parse_locust_csv(header + "\n")


@pytest.mark.parametrize(
    ("name", "tool", "requests"),
    [("locust_stats.csv", "locust", 44), ("wrk_latency.txt", "wrk", 281),
     ("locust_window.json", "locust", 309)],
)  # fmt: skip
def test_read_stats_file_knows_each_format(name, tool, requests):
    f = read_stats_file(LOAD / name)
    assert (f.tool, f.requests) == (tool, requests)


def test_read_stats_file_takes_a_samples_stats_line_and_refuses_the_rest(tmp_path):
    log = tmp_path / "service.log"
    log.write_text(
        "starting\n"
        '{"sample": "lock_contention", "threads": 2, "requests": 8101, "seconds": 10.808,'
        ' "rps": 749.51, "p50_ms": 0.955, "p99_ms": 21.114}\n'
    )
    f = read_stats_file(log)
    assert (f.requests, f.p50_ms, f.p99_ms) == (8101, 0.955, 21.114)
    log.write_text("Segmentation fault\n")
    with pytest.raises(ValueError, match="no JSON line"):
        read_stats_file(log)


# --- the generator's CPU (hand-built schedstat samples) --------------------------------------

MAIN = (100, 100)  # (pid, tid) of the generator's main thread


def samples(*steps: tuple[float, float, float], steal: float = 0.0) -> list[CpuSample]:
    """Half-second samples; each step is (seconds later, on-CPU s, run-queue s) added over
    it. The host's counters rise with the samples (one of two CPUs busy, ``steal`` of that
    busy time stolen by the hypervisor)."""
    at, on, wait = 0.0, 0.0, 0.0
    out = [CpuSample(at, {MAIN: (0, 0)}, (0.0, 1.0, 0.0))]
    for dt, d_on, d_wait in steps:
        at, on, wait = at + dt, on + d_on, wait + d_wait
        host = (at, 1.0 + 2 * at, steal * at)
        out.append(CpuSample(at, {MAIN: (int(on * 1e9), int(wait * 1e9))}, host))
    return out


#: a command launched at the go, blocked 0.5 s on a cold disk in its start-up (neither on a
#: CPU nor queued), then spinning for the rest of a 2 s window: CI saw this as 0.747
COLD_START = samples((0.5, 0.0, 0.0), (0.5, 0.49, 0.0), (0.5, 0.48, 0.01), (0.5, 0.5, 0.0))


def test_a_launched_generators_start_up_is_not_counted_as_load_it_could_have_sent():
    g = generator_cpu(COLD_START, launched=True)
    assert g["measured"] and g["saturated"], g
    assert g["startup_s"] == 0.5 and g["busiest_thread_demand"] == pytest.approx(0.987, abs=1e-3)
    assert g["seconds"] == 2.0 and g["cpu_cores"] == pytest.approx(0.735, abs=1e-3)
    # the contrast: a warmed-up generator (locust) idle for that half-second was not saturated
    g = generator_cpu(COLD_START, launched=False)
    assert not g["saturated"] and g["startup_s"] == 0.0
    assert g["busiest_thread_demand"] == pytest.approx(0.74, abs=1e-3)


def test_a_generator_that_never_reaches_saturation_is_measured_over_the_whole_window():
    steady = samples(*[(0.5, 0.3, 0.02)] * 4)  # 64% busy from the start
    g = generator_cpu(steady, launched=True)
    assert not g["saturated"] and g["startup_s"] == 0.0
    assert g["busiest_thread_demand"] == pytest.approx(0.64, abs=1e-3)


def test_a_generator_saturated_only_in_the_windows_second_half_is_not_saturated():
    late = samples((0.5, 0.05, 0.0), (0.5, 0.05, 0.0), (0.5, 0.5, 0.0), (0.5, 0.5, 0.0))
    g = generator_cpu(late, launched=True)
    assert not g["saturated"] and g["startup_s"] == 0.0
    assert g["busiest_thread_demand"] == pytest.approx(0.55, abs=1e-3)


def test_time_the_hypervisor_stole_while_it_ran_counts_as_demand():
    # a spinning generator on a VM: on a CPU 0.85 of the window, never queued, while the
    # hypervisor took 15% of the host's busy time (a CI run saw 0.826-0.879, 0.001 queued)
    spinning = [(0.5, 0.425, 0.0)] * 6
    g = generator_cpu(samples(*spinning, steal=0.15))
    assert g["saturated"] and g["host_steal_share"] == 0.15
    assert g["busiest_thread_oncpu"] == 0.85 and g["busiest_thread_demand"] == 1.0
    # near misses: no steal; a thread half idle is not made saturated by steal
    assert not generator_cpu(samples(*spinning))["saturated"]
    half = generator_cpu(samples(*[(0.5, 0.25, 0.0)] * 6, steal=0.15))
    assert not half["saturated"] and half["busiest_thread_demand"] == pytest.approx(0.588, abs=1e-3)


def test_time_queued_for_a_core_counts_as_demand():
    starved = samples(*[(0.5, 0.25, 0.23)] * 4)  # on a CPU half the time, queued the rest
    g = generator_cpu(starved)
    assert g["saturated"] and g["busiest_thread_demand"] == pytest.approx(0.96, abs=1e-3)
    assert g["busiest_thread_oncpu"] == 0.5 and g["busiest_thread_waiting"] == 0.46


def test_the_busiest_thread_is_the_one_that_wanted_a_core_most():
    s = samples(*[(0.5, 0.1, 0.0)] * 4)
    worker = (100, 101)
    for i, smp in enumerate(s):
        smp.threads[worker] = (int(i * 0.47e9), 0)
    g = generator_cpu(s)
    assert g["threads"] == 2 and g["saturated"] and g["busiest_thread_oncpu"] == 0.94
    assert g["cpu_cores"] == pytest.approx(1.14, abs=1e-3)


def test_too_short_a_window_is_not_measured():
    assert generator_cpu(samples()) == {"measured": False, "saturated": False}
    assert generator_cpu(samples((0.1, 0.1, 0.0))) == {"measured": False, "saturated": False}
    assert SATURATED_SHARE == 0.9  # docs/sweep.md quotes it


def test_a_launched_generators_start_up_is_found_on_a_vm_that_steals():
    # the cold start again on a VM stealing 15%: spinning reads 0.85 on a CPU; the start-up
    # is still left out (it was not, when the start-up cut ignored steal)
    spinning = [(0.5, 0.425, 0.0)] * 3
    g = generator_cpu(samples((0.5, 0.0, 0.0), *spinning, steal=0.15), launched=True)
    assert g["saturated"] and g["startup_s"] == 0.5 and g["busiest_thread_demand"] == 1.0
    # without steal the same on-CPU times are a thread that never saturated
    g = generator_cpu(samples((0.5, 0.0, 0.0), *spinning), launched=True)
    assert not g["saturated"] and g["startup_s"] == 0.0
