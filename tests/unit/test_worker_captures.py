"""The other workers' child captures (diagnose/collect/workers.py): each gets its share of
the budgets, and its command line gives the child exactly the options of the capture."""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import replace

import pytest

from diagnose.cli.attach import attach
from diagnose.cli.common import make_options
from diagnose.collect.base import CaptureOptions
from diagnose.collect.budget import default_budget
from diagnose.collect.system import cpu_capacity
from diagnose.collect.workers import WorkerRun, child_argv, settle, share


def parsed(argv: list[str]) -> tuple[dict, CaptureOptions]:
    """What ``diagnose attach`` makes of ``argv`` (the real CLI's parser)."""
    assert argv[:4] == [sys.executable, "-m", "diagnose", "attach"]
    params = attach.make_context("attach", argv[4:]).params
    names = inspect.signature(make_options).parameters
    return params, make_options(**{k: params[k] for k in names if k in params})


@pytest.mark.parametrize(
    "options",
    [
        CaptureOptions(cpu_budget=0.025, max_bundle_bytes=512 * 2**20),
        CaptureOptions(
            duration=3.5, rate=250, rate_chosen=True, proc_rate=5, proc_rate_chosen=True,
            cpu_budget=0.0, native=True, nonblocking=False, collectors=("proc", "pyspy"),
            max_bundle_bytes=64 * 2**20, tables="csv", sched_events=15_000,
        ),
    ],
)  # fmt: skip
def test_the_child_gets_the_captures_options(options: CaptureOptions):
    # WHEN a worker's command line is built and parsed back by diagnose attach
    params, back = parsed(child_argv(4242, "/proc/self/fd/9/4242", options, (4241, 4243)))
    # THEN it captures that worker as given, into that directory, recording only, knowing
    # the service's other processes
    assert params["pid"] == 4242 and params["follow"] is False and params["no_report"] is True
    assert params["siblings"] == "4241,4243"
    assert str(params["out"]) == "/proc/self/fd/9/4242"
    # with the same options (the child captures one process: its own --workers is moot),
    # but for its perf, which follows its threads (diagnose's own perf may record the CPUs)
    assert back.perf_scope == "threads"
    assert replace(back, workers=options.workers, perf_scope=options.perf_scope) == options


def test_each_worker_gets_its_share_of_the_budgets():
    opts = CaptureOptions(cpu_budget=0.06, max_bundle_bytes=1024 * 2**20)
    three = share(opts, 1, 3)
    assert three.cpu_budget == pytest.approx(0.02) and three.max_bundle_bytes == 1024 * 2**20 // 3
    assert share(opts, 1, 2).sched_events == 15_000  # the scheduler trace's 30,000 events
    assert share(replace(opts, sched_events=40_000), 1, 2).sched_events == 40_000  # as given
    # near misses: one worker keeps the whole; no budget (0) stays none; the disk share has a floor
    assert share(opts, 1, 1) is opts
    assert share(replace(opts, cpu_budget=0.0), 1, 4).cpu_budget == 0.0
    assert share(replace(opts, max_bundle_bytes=2**20), 1, 4).max_bundle_bytes == 2**20


def test_the_default_budget_is_shared_too():
    # no --cpu-budget: the default for this process's cores, divided
    whole = default_budget(cpu_capacity(os.getpid()).get("cores_available"))
    assert share(CaptureOptions(), os.getpid(), 2).cpu_budget == pytest.approx(whole / 2, abs=1e-4)


@pytest.mark.parametrize(
    ("rc", "status", "reason"),
    [
        (0, "ok", ""),
        (5, "partial", "some of its collectors could not measure everything"),
        (6, "partial", "its share of the disk budget ended it early"),
        (9, "failed", "exit code 9"),
    ],
)
def test_a_workers_outcome_is_read_from_its_exit_code(rc, status, reason):
    run = WorkerRun(4242, None)
    settle(run, rc)
    assert (run.status, run.reason) == (status, reason)
    assert run.to_dict() == {"pid": 4242, "dir": "workers/4242", "status": status, "reason": reason}
