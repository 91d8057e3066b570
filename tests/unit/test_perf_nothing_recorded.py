"""A perf recording without a single event: an idle target (ok, with a note) or a recording
that missed a busy one (failed, saying why). Hand-built recordings; the real ones are
tests/e2e/test_idle_target.py (idle) and tests/e2e/test_perf.py (busy)."""

from __future__ import annotations

import signal
import threading
from types import SimpleNamespace

import pytest

from diagnose.bundle.manifest import CollectorStatus
from diagnose.collect.perf.oncpu import PerfCollector
from diagnose.collect.perf.record import PerfRecord

WROTE = (
    "[ perf record: Woken up 1 times to write data ]\n"
    "[ perf record: Captured and wrote 0.001 MB /b/native/.perf.data ]\n"
)
IDLE = "no on-CPU samples: no thread of the target ran on a CPU (an idle target)"


def judge(
    stderr=WROTE,
    cpu=0.0,
    started=0.3,
    window=10.0,
    exited=False,
    error="",
    rc=0,
    opened=0.0,
    spun=None,
    never=False,
    said_at=None,
    unseen="",
):
    # the window opened ``opened`` s after the capture's start and lasted ``window`` s;
    # perf said it recorded ``started`` s after the capture's start
    ctx = SimpleNamespace(
        window=lambda: window,
        window_start_s=lambda: opened,
        end_s=lambda: opened + window,
        target_exited=threading.Event(),
    )
    if exited:
        ctx.target_exited.set()
    rec = SimpleNamespace(
        stderr=lambda: stderr,
        never_recorded=lambda: never,
        recording_at=said_at,
        target_cpu_used=lambda: cpu,
        started_t=started,
        rc=rc,
        fix_details=lambda: {"poll_fix": "preloaded", "kallsyms": "snapshot"},
        spun=spun,
        spin_problem=lambda: PerfRecord.spin_problem(rec),  # type: ignore[arg-type]
        ctx=ctx,
    )
    return PerfCollector().nothing_recorded(ctx, rec, error, IDLE, [], {}, 0.05, unseen)  # type: ignore[arg-type]


def test_a_perf_that_never_said_it_recorded_failed_whatever_the_target_did():
    # a capture stopped (Ctrl-C) while perf was still starting: perf wrote its file but never
    # enabled its events; not an idle target, not "started late" either
    for cpu in (0.0, 0.06):
        r = judge(cpu=cpu, window=0.1, never=True)
        assert r.status == CollectorStatus.FAILED
        assert r.reason.startswith("perf had not begun recording when the capture ended, 0.1 s")


def test_an_idle_target_is_ok_with_a_note():
    r = judge(cpu=0.0)
    assert (r.status, r.reason) == (CollectorStatus.OK, IDLE)
    assert r.details["target_cpu_s"] == 0.0


@pytest.mark.parametrize(("cpu", "status"), [(0.04, "ok"), (0.06, "failed"), (1.58, "failed")])
def test_a_target_that_used_cpu_meanwhile_was_missed(cpu, status):
    # perf's success line, no sample, while the target used CPU: perf started recording late
    r = judge(cpu=cpu)
    assert r.status.value == status
    if status == "failed":
        assert f"the target used {cpu:.2f} s of CPU" in r.reason and "late" in r.reason


@pytest.mark.parametrize(("cpu", "status"), [(0.04, "ok"), (0.33, "partial")])
def test_cpu_missed_after_perf_said_it_recorded_is_no_late_start(cpu, status):
    # perf said when its events went on (-D), and the target's CPU is counted from then: a
    # target whose CPU goes to threads living 50 ms each (0.33 s in 4 s) gave perf no sample
    r = judge(cpu=cpu, said_at=100.2, unseen=": short threads")
    assert r.status.value == status
    if status == "partial":
        assert r.reason == (
            "perf recorded nothing although the target used 0.33 s of CPU after perf began "
            "recording: short threads"
        )


@pytest.mark.parametrize("opened", [0.0, 3.0])
@pytest.mark.parametrize(("late", "status"), [(2.4, "ok"), (2.6, "failed")])
def test_without_the_targets_cpu_time_perf_must_have_run_most_of_the_window(late, status, opened):
    # counted from the window's opening (once every collector recorded), not the command's
    r = judge(cpu=None, started=opened + late, window=10.0, opened=opened)
    assert r.status.value == status
    if status == "failed":
        assert r.reason.startswith("perf started 2.6 s into the 10.0 s window")


def test_a_target_that_exited_is_partial():
    r = judge(exited=True)
    assert r.status is CollectorStatus.PARTIAL
    assert r.reason == f"the target exited during the capture; {IDLE}"


def test_perf_s_own_errors_stay_failures():
    # perf script's error, no success line, a target gone, perf stopped before it began
    assert judge(error="perf script: bad data").reason == "perf script: bad data"
    gone = "Error:\nThe sys_perf_event_open() syscall returned with 3 (No such process)\n"
    assert judge(stderr=gone).reason == "the target exited before perf could attach to it"
    early = judge(stderr="", rc=-signal.SIGINT)
    assert early.status is CollectorStatus.FAILED
    assert early.reason.startswith("perf was stopped before it had started recording")
    assert "exit status 1" in judge(stderr="", rc=1).reason


def test_a_perf_stopped_busy_looping_before_any_sample_says_so():
    # the watchdog stopped perf 1.2 s into a window that opened 0.5 s after the start, before
    # the target ran: not an idle target, a recording cut short by perf's own loop
    r = judge(cpu=0.0, opened=0.5, spun=(1.7, 0.93))
    assert r.status == CollectorStatus.FAILED
    assert r.reason.startswith("perf was stopped 1.2 s into the window: it used 0.93 cores")
    assert r.details["poll_fix"] == "preloaded"
