"""Whose the other processes' CPU was (analyse/host.py, host_processes), on a hand-built
proc/host.csv: the target's clients, its own service's other processes, or neighbours."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.analyse.host import host_processes
from diagnose.analyse.pipeline import analyse_data
from tests.unit.analysis import FR, bundle_data, run

CORES = {"cores_available": 2}


def host_table(rows: list[tuple[float, int, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["t", "pid", "comm", "cpu_s", "role"])


# scans at 1, 3 and 11 s (a 10 s span) on 2 cores: the first lists every process, without
# a role; later ones only those whose CPU moved, with the role read then
SCANS = host_table(
    [
        (1.0, 100, "locust", 5.0, ""),
        (1.0, 200, "stress", 1.0, ""),
        (1.0, 300, "gunicorn", 0.5, ""),
        (1.0, 400, "sshd", 3.0, ""),  # never moves: no CPU in the window
        (3.0, 100, "locust", 7.0, "client"),
        (3.0, 500, "python3", 1.0, "other"),  # started after the first scan: from 0
        (11.0, 100, "locust", 13.0, "client"),
        (11.0, 200, "stress", 3.0, "other"),
        (11.0, 300, "gunicorn", 1.5, "service"),
        (11.0, 500, "python3", 2.0, "other"),
    ]
)


def test_each_process_s_cpu_goes_to_its_role():
    ctx = run(bundle_data(host_procs=SCANS), lambda c: (c.metrics.update(CORES), host_processes(c)))
    m = ctx.metrics
    # locust: 8 s of CPU in 10 s = 0.8 cores of 2
    assert m["host_client_cpu_share"] == pytest.approx(0.4)
    assert m["host_service_cpu_share"] == pytest.approx(0.05)
    # stress 2 s + the new python3 2 s = 0.4 cores of 2
    assert m["host_neighbour_cpu_share"] == pytest.approx(0.2)
    assert m["host_client_names"] == "locust (100)"
    assert m["host_neighbour_names"] == "stress (200), python3 (500)"  # busiest first, by pid
    top = ctx.out.extra["host_processes"]
    assert [(p["pid"], p["role"], p["cores"]) for p in top] == [
        (100, "client", 0.8), (200, "other", 0.2), (500, "other", 0.2), (300, "service", 0.1),
    ]  # fmt: skip


def test_the_service_s_cpu_counts_its_other_workers():
    # GIVEN the target used 0.6 of the cores and its sibling worker 0.05 (SCANS: gunicorn)
    def step(c):
        c.metrics.update(CORES, process_cpu_share=0.6, service_processes=2)
        host_processes(c)

    m = run(bundle_data(host_procs=SCANS), step).metrics
    assert m["service_cpu_share"] == pytest.approx(0.65)


def test_a_process_never_given_a_role_is_a_neighbour():
    scans = host_table([(0.0, 7, "job", 0.0, ""), (4.0, 7, "job", 2.0, "")])
    ctx = run(bundle_data(host_procs=scans), lambda c: (c.metrics.update(CORES), host_processes(c)))
    assert ctx.metrics["host_neighbour_cpu_share"] == pytest.approx(0.25)
    assert ctx.metrics["host_client_cpu_share"] == 0.0  # measured: no client used CPU


def test_one_scan_measures_nothing():
    scans = host_table([(1.0, 7, "job", 0.0, "")])
    ctx = run(bundle_data(host_procs=scans), lambda c: (c.metrics.update(CORES), host_processes(c)))
    assert "host_client_cpu_share" not in ctx.metrics


def test_a_bundle_without_the_scans_says_why():
    data = bundle_data(missing={"host_procs": "the bundle has no proc/host.csv (older)"})
    a = analyse_data(data, FR)
    assert a.metrics["host_client_cpu_share"] is None
    assert a.unmeasured["host_neighbour_cpu_share"] == "the bundle has no proc/host.csv (older)"
