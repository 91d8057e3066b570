"""diagnose's own CPU by part (collect/toolcpu.py), its analysis step and its one line.

ToolCpu is tested against real processes: a helper started the way collectors start them
(collect/child.Child) that spins, one that sleeps, and a thread of this process that spins
and then ends (its CPU must not vanish from the total)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from diagnose.analyse import host
from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.child import OWN_ACCOUNT, Child, live_helpers
from diagnose.collect.toolcpu import ENDED, ToolCpu, thread_label
from diagnose.render.text import tool_cost
from tests.unit.analysis import bundle_data, run

#: burns CPU seconds, not wall seconds: the test holds on a host busy with other work
SPIN = "import time\nwhile time.process_time() < 20: pass"


def spin(cpu_seconds: float) -> None:
    end = time.thread_time() + cpu_seconds
    while time.thread_time() < end:
        pass


def test_parts_name_the_helper_that_used_the_cpu_and_keep_ended_threads(tmp_path):
    tc = ToolCpu()
    busy = Child([sys.executable, "-c", SPIN], tmp_path / "busy.err", label="py-spy trace")
    idle = Child([sys.executable, "-c", "import time; time.sleep(20)"], tmp_path / "idle.err")
    try:
        assert (busy.pid, "py-spy trace") in live_helpers()
        assert idle.label == Path(sys.executable).name  # unlabelled: its program's name
        tc.mark_start()
        worker = threading.Thread(target=spin, args=(0.3,), name="diagnose-worker")
        worker.start()
        worker.join()  # it ended before the parts are read again
        # join() returns once Python is done with the thread; the kernel may list its task a
        # moment longer (seen under load: its CPU then counted as a live thread's)
        gone = time.monotonic() + 10
        while Path(f"/proc/self/task/{worker.native_id}").exists() and time.monotonic() < gone:
            time.sleep(0.01)
        busy_cpu = psutil.Process(busy.pid)
        deadline = time.monotonic() + 20
        while sum(busy_cpu.cpu_times()[:2]) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
        parts = tc.since_start()
    finally:
        busy.stop(grace=1)
        idle.stop(grace=1)
    # the spinning helper used most of a core; the sleeping one nothing worth a line
    assert parts["py-spy trace"] >= 0.3, parts
    assert parts.get(idle.label, 0.0) < 0.1, parts
    # the ended thread's 0.3 s is kept, under ENDED (its own part is gone with it)
    assert parts.get(ENDED, 0.0) >= 0.2, parts
    assert "diagnose worker" not in parts
    assert list(parts.values()) == sorted(parts.values(), reverse=True)


def test_a_helper_that_exited_keeps_the_cpu_it_used(tmp_path):
    tc = ToolCpu()
    tc.mark_start()
    child = Child([sys.executable, "-c", SPIN.replace("20", "0.3")], tmp_path / "e.err",
                  label="perf script native")  # fmt: skip
    deadline = time.monotonic() + 10
    while child.poll() is None and time.monotonic() < deadline:
        tc.total()  # the sampler reads the helpers at every tick
        time.sleep(0.05)
    child.wait()
    assert tc.since_start().get("perf script native", 0.0) >= 0.2


def test_another_diagnose_capturing_a_worker_is_left_to_its_own_account(tmp_path):
    # GIVEN a helper that spins as a worker's capture (its own bundle counts its CPU, and
    # its py-spy's), and an ordinary helper spinning beside it
    tc = ToolCpu()
    tc.mark_start()
    worker = Child([sys.executable, "-c", SPIN.replace("20", "0.3")], tmp_path / "w.err",
                   label=OWN_ACCOUNT)  # fmt: skip
    perf = Child([sys.executable, "-c", SPIN.replace("20", "0.3")], tmp_path / "p.err",
                 label="perf script native")  # fmt: skip
    deadline = time.monotonic() + 20
    while (worker.poll() is None or perf.poll() is None) and time.monotonic() < deadline:
        total = tc.total()
        time.sleep(0.05)
    worker.wait()
    perf.wait()
    # THEN the ordinary helper is counted, the worker's capture is not (near miss: same CPU)
    parts = tc.since_start()
    assert parts.get("perf script native", 0.0) >= 0.2, parts
    assert OWN_ACCOUNT not in parts, parts
    # and the running total holds this process and the ordinary helper's ~0.3 s, not 0.6 s
    own = psutil.Process().cpu_times()
    assert total < own.user + own.system + 0.5


def test_a_thread_that_used_a_few_milliseconds_is_counted_to_the_millisecond():
    # a sampler that reads /proc for 4 ms in a window used no whole 10 ms clock tick: stat
    # would say 0 or 0.01, schedstat says what it ran
    tc = ToolCpu()
    done = threading.Event()
    ran = threading.Event()

    def brief() -> None:
        spin(0.004)
        ran.set()
        done.wait(10)

    t = threading.Thread(target=brief, name="diagnose-brief")
    tc.mark_start()
    t.start()
    try:
        ran.wait(10)
        parts = tc.since_start()
    finally:
        done.set()
        t.join()
    assert 0.003 <= parts.get("diagnose brief", 0.0) < 0.009, parts


def test_before_the_window_opened_there_are_no_parts():
    assert ToolCpu().since_start() == {}


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("MainThread", "diagnose main"),
        ("diagnose-proc", "diagnose proc"),
        ("Thread-3", "diagnose Thread-3"),
    ],
)
def test_thread_labels(name, label):
    assert thread_label(name) == label


def analysed_parts(details: dict) -> list:
    data = bundle_data()
    data.bundle.manifest.collectors["proc"] = CollectorRecord(
        "proc", CollectorStatus.OK, details=details
    )
    return run(data, host.tool_parts).out.extra.get("tool_cpu_parts", [])


def test_tool_parts_become_cores_over_the_window_largest_first():
    parts = analysed_parts(
        {
            "tool_cpu_parts_s": {"diagnose proc": 0.1, "py-spy trace": 0.5},
            "tool_cpu_parts_span_s": 10.0,
        }
    )
    assert parts == [
        {"part": "py-spy trace", "cpu_s": 0.5, "cores": 0.05},
        {"part": "diagnose proc", "cpu_s": 0.1, "cores": 0.01},
    ]


@pytest.mark.parametrize(
    "details",
    [
        {},
        {"tool_cpu_parts_s": {"x": 1.0}},  # no span
        {"tool_cpu_parts_s": {"x": 1.0}, "tool_cpu_parts_span_s": 0},
        {"tool_cpu_parts_s": ["x"], "tool_cpu_parts_span_s": 1.0},
        {"tool_cpu_parts_s": {"x": "1"}, "tool_cpu_parts_span_s": 1.0},  # a hand-edited value
        {"tool_cpu_parts_s": {"x": True}, "tool_cpu_parts_span_s": 1.0},
    ],
)
def test_tool_parts_ignore_what_is_not_a_measurement(details):
    assert analysed_parts(details) == []


def test_the_one_line_names_the_costliest_parts():
    line = tool_cost(
        {
            "tool_cpu_cores": 0.2,
            "tool_cpu_share": 0.1,
            "tool_cpu_parts": [
                {"part": p, "cpu_s": c * 10, "cores": c}
                for p, c in [
                    ("py-spy trace", 0.09),
                    ("py-spy gil", 0.03),
                    ("diagnose proc", 0.03),
                    ("x", 0.01),
                ]
            ],
        }
    )
    assert line == (
        "diagnose and its helpers used 0.20 cores while capturing (10% of the cores available); "
        "0.16 while the window was open (py-spy trace 0.09, py-spy gil 0.03, diagnose proc 0.03)"
    )
    assert (
        tool_cost({"tool_cpu_cores": 0.2})
        == "diagnose and its helpers used 0.20 cores while capturing"
    )


def test_the_one_line_states_the_budget_and_what_it_lowered():
    plan = {"budget_cores": 0.05, "thinned": ["py-spy 100 -> 72 Hz", "GIL sampler 100 -> 18 Hz"]}
    line = tool_cost({"tool_cpu_cores": 0.06, "cpu_budget": plan})
    assert line.endswith(
        "; budget 0.05 cores, lowered py-spy 100 -> 72 Hz, GIL sampler 100 -> 18 Hz"
    )
    kept = tool_cost({"tool_cpu_cores": 0.02, "cpu_budget": {"budget_cores": 0.4, "thinned": []}})
    assert kept.endswith("; budget 0.4 cores, no rate lowered")
    # no budget (--cpu-budget 0), or a report from before it: nothing said
    assert "budget" not in tool_cost({"tool_cpu_cores": 0.2, "cpu_budget": {"budget_cores": 0}})
    assert "budget" not in tool_cost({"tool_cpu_cores": 0.2, "cpu_budget": "x"})
