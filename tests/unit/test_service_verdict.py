"""One verdict for a service of several workers (diagnose/verdict/service.py), from
hand-built worker verdicts: the workers weigh by the CPU each used, disagreement lowers the
confidence, a worker that could not be judged is named and not counted."""

from __future__ import annotations

import pytest

from diagnose.verdict.service import MIN_WEIGHT, WorkerVerdict, service_verdict


def w(pid: int, primary: str | None, cores: float | None, conf: float = 0.8, kind: str | None = None) -> WorkerVerdict:  # fmt: skip
    status = "ok" if primary else "failed"
    return WorkerVerdict(pid, status, primary, kind, conf, cores, "" if primary else "exit code 1")


def test_workers_that_agree_give_their_verdict_and_their_weighted_confidence():
    # GIVEN two workers that both say preprocess, one busier and surer
    v = service_verdict([w(1, "preprocess", 0.9, 0.9, "cpu"), w(2, "preprocess", 0.3, 0.5)])
    # THEN the service says preprocess, with the CPU-weighted confidence (0.9*0.9+0.3*0.5)/1.2
    assert v is not None
    assert (v["primary"], v["kind"], v["agree"]) == ("preprocess", "cpu", True)
    assert v["confidence"] == pytest.approx(0.8, abs=1e-3)
    assert v["summary"] == "preprocess in 2 of 2 workers judged (1.20 of 1.20 cores)"


def test_the_busier_worker_outweighs_a_majority_of_idler_ones():
    # GIVEN one busy worker that waits on a lock and two near-idle ones
    v = service_verdict([w(1, "lock", 1.5, 0.8), w(2, "idle", 0.05, 0.9), w(3, "idle", 0.05, 0.9)])
    # THEN the service's verdict is the busy worker's, its confidence lowered by the others
    assert v is not None and v["primary"] == "lock" and not v["agree"]
    assert v["confidence"] == pytest.approx(0.8 * 1.5 / 1.6, abs=1e-3)
    assert v["workers_agreeing"] == 1 and v["cpu_share_agreeing"] == pytest.approx(0.938, abs=1e-3)
    assert "PID 2: idle (0.05 cores), PID 3: idle (0.05 cores)" in v["summary"]
    # near miss: the idle ones together busier than the locked one: idle wins
    v = service_verdict([w(1, "lock", 0.3), w(2, "idle", 0.2), w(3, "idle", 0.2)])
    assert v is not None and v["primary"] == "idle"


def test_a_tie_goes_to_the_busiest_workers_category():
    v = service_verdict([w(7, "compute", 0.5), w(8, "scheduling", 0.5)])
    assert v is not None and v["primary"] == "compute"
    v = service_verdict([w(8, "scheduling", 0.5), w(7, "compute", 0.5)])
    assert v is not None and v["primary"] == "scheduling"


def test_a_worker_not_judged_is_named_and_not_counted():
    v = service_verdict([w(1, "compute", 0.9, 0.7), w(2, None, None)])
    assert v is not None and v["primary"] == "compute" and v["agree"]
    assert v["confidence"] == pytest.approx(0.7) and v["workers_judged"] == 1
    assert v["summary"].endswith("; not judged: PID 2 (exit code 1)")
    # near miss: no worker judged: no verdict
    assert service_verdict([w(1, None, None), w(2, None, None)]) is None


def test_workers_without_measured_cpu_weigh_the_minimum():
    v = service_verdict([w(1, "idle", None, 0.9), w(2, "idle", 0.0, 0.7)])
    assert v is not None and v["primary"] == "idle"
    assert v["confidence"] == pytest.approx(0.8)  # equal weights: the plain mean
    assert MIN_WEIGHT > 0


def test_one_worker_doing_the_work_of_the_service_is_uneven_load():
    # GIVEN two workers under load, one doing 99% of the CPU (uvicorn --workers 2 with
    # locust's keep-alive connections all accepted by one worker)
    v = service_verdict([w(1, "compute", 1.5), w(2, "idle", 0.003)])
    assert (
        v is not None and v["uneven"] and v["busiest_cpu_share"] == pytest.approx(0.998, abs=1e-3)
    )
    assert v["uneven_text"].startswith("unevenly loaded: PID 1 did 100% of the workers' CPU")
    # near misses: evenly loaded; a quiet service (0.1 cores in all); one worker judged
    for ws in (
        [w(1, "compute", 0.9), w(2, "compute", 0.8)],
        [w(1, "idle", 0.09), w(2, "idle", 0.001)],
        [w(1, "compute", 1.5), w(2, None, None)],
    ):
        v = service_verdict(ws)
        assert v is not None and not v["uneven"] and v["uneven_text"] == ""
