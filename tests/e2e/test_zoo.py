"""The sample zoo's services work: started as a user starts them, loaded by locust.

Each test starts a real-stack sample from samples/services/ (its own session), loads it
with locust in a process group of its own, and checks the sample itself, not diagnose:
it serves requests without failures, its process shape is what its descriptor says (a
pre-fork master with workers, a service with a helper child), and its counterfactual knob
changes the cost it claims to change. The contrasts are per-request CPU (or latency for the
I/O sample), which hold on a busy 2-core host where throughput alone would not; each is a
factor of 2 or more below what was measured here (the measured ratio is in each test).
Whether diagnose gets these samples right is measured by python -m benchmarks accuracy.
"""

from __future__ import annotations

from pathlib import Path

import psutil

from benchmarks.zoo import Change, Running, measure, select
from tests.conftest import require_locust

require_locust()
SECONDS = 6.0


def cpu_ms_per_request(m: dict) -> float:
    assert m["rps"] > 0 and m["fail_rps"] == 0, m
    return 1000 * m["service_cores"] / m["rps"]


def test_fastapi_text_cleaning_fix_cuts_cpu_per_request(tmp_path: Path):
    # GIVEN the FastAPI service whose handler cleans text in plain Python
    s = select(["fastapi_textclean"])[0]
    # WHEN it is loaded as it is and with its counterfactual (CLEAN_MODE=fast)
    base = measure(s, None, tmp_path, SECONDS)
    fixed = measure(s, s.fix, tmp_path, SECONDS)
    # THEN both serve, and the fix costs far less CPU a request (measured 3.4x: 9.3 -> 2.8 ms)
    assert cpu_ms_per_request(base) > 2 * cpu_ms_per_request(fixed), (base, fixed)


def test_gunicorn_master_forks_two_workers_and_draft_decoding_is_cheaper(tmp_path: Path):
    s = select(["gunicorn_pillow"])[0]

    def two_workers(run: Running) -> None:
        # the PID a user attaches to is the master's; it has its two pre-forked workers
        workers = psutil.Process(run.pid).children()
        assert len(workers) == 2, workers
        assert all("gunicorn" in " ".join(w.cmdline()) for w in workers)

    # GIVEN the gunicorn service as a user starts it, WHEN loaded as it is and with
    # IMAGE_DRAFT=1
    base = measure(s, None, tmp_path, SECONDS, inspect=two_workers)
    fixed = measure(s, s.fix, tmp_path, SECONDS)
    # THEN decoding at reduced scale costs far less CPU a request (measured 2.4x)
    assert cpu_ms_per_request(base) > 1.5 * cpu_ms_per_request(fixed), (base, fixed)


def test_feature_store_runs_as_a_helper_child_and_its_latency_sets_the_pace(tmp_path: Path):
    s = select(["threaded_featurestore_child"])[0]

    def helper_child(run: Running) -> None:
        # the feature store is a child process, not a worker (forked, so its command line is
        # the service's): it listens on a port of its own
        kids = psutil.Process(run.pid).children()
        assert len(kids) == 1, kids
        listening = {c.laddr.port for c in kids[0].net_connections("tcp") if c.status == "LISTEN"}
        assert listening and run.port not in listening, listening

    # GIVEN the service under load, WHEN its dependency answers in 5 ms instead of 40 ms
    # (3 calls a request)
    slow = measure(s, None, tmp_path, SECONDS, inspect=helper_child)
    fast = measure(s, Change("fast store", env={"FEATURE_MS": "5"}), tmp_path, SECONDS)
    # THEN it serves more (in theory 8x) while the service's CPU stays low
    assert slow["rps"] > 0 and slow["fail_rps"] == 0, slow
    assert fast["rps"] > 2 * slow["rps"], (slow, fast)
    assert slow["service_cores"] < 0.5, slow


def test_uvicorn_workers_run_the_transformers_model(tmp_path: Path):
    s = select(["uvicorn_workers2_bert"])[0]

    def two_workers(run: Running) -> None:
        # uvicorn --workers 2: the PID started is the master, with two worker processes
        kids = psutil.Process(run.pid).children(recursive=True)
        assert sum("multiprocessing" in " ".join(k.cmdline()) for k in kids) >= 2, kids

    # GIVEN uvicorn --workers 2 with the BERT encoder, WHEN it is 1 layer deep instead of 6
    base = measure(s, None, tmp_path, SECONDS, inspect=two_workers)
    small = measure(s, Change("1 layer", env={"MODEL_LAYERS": "1"}), tmp_path, SECONDS)
    # THEN both serve, and the model's depth sets the CPU a request
    assert cpu_ms_per_request(base) > 2 * cpu_ms_per_request(small), (base, small)
