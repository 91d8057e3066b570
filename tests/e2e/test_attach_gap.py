"""Threads born while a ``perf record -p`` attached (collect/perf/attach_gap.py), read from
a real process's /proc: the candidates are the threads born after perf was spawned and
before its events came on; those that then used CPU without one event in the recording
are named. (Which threads perf itself misses depends on its set-up's timing under load: a
CI run lost two; here the recording's thread IDs are given by hand.)"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from diagnose.collect.perf.attach_gap import Untraced, born_since, describe, missed, task_ids

# each line read on stdin starts a thread that hashes without the GIL (busy) or sleeps, and
# prints its TID
TARGET = r"""
import hashlib, sys, threading, time
DATA = b"x" * 4_000_000
def busy():
    while True:
        hashlib.sha256(DATA).digest()
def idle():
    time.sleep(600)
for line in sys.stdin:
    t = threading.Thread(target=busy if line.strip() == "busy" else idle, daemon=True)
    t.start()
    time.sleep(0.02)
    print(t.native_id, flush=True)
"""


@pytest.fixture
def target() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.communicate(timeout=10)


def start_thread(proc: subprocess.Popen[str], kind: str) -> int:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(kind + "\n")
    proc.stdin.flush()
    return int(proc.stdout.readline())


def test_the_threads_born_while_perf_attached_that_ran_untraced_are_named(target):
    t0 = time.monotonic()
    time.sleep(0.2)  # the interpreter's start-up
    before = task_ids(target.pid)  # perf is spawned: it lists these
    busy = start_thread(target, "busy")
    idle = start_thread(target, "idle")
    time.sleep(0.05)  # tick-grained start times: born well before the events came on
    enabled = time.monotonic()
    time.sleep(0.05)
    later = start_thread(target, "busy")  # born after: it inherited perf's events
    candidates = born_since(target.pid, before, enabled, t0)
    assert {u.tid for u in candidates} == {busy, idle}
    assert all(0.15 <= u.born_s <= enabled - t0 + 0.01 for u in candidates), candidates
    assert all(u.name.startswith("python") for u in candidates), candidates
    time.sleep(0.5)  # the window: the busy thread runs
    now = born_since(target.pid, before, None, t0)
    assert {u.tid for u in now} == {busy, idle, later}
    # perf's recording held none of them: the busy one is missed, with its CPU since the
    # events came on; the idle one had nothing to miss
    gone = missed(candidates, now, seen=set(), min_cpu_s=0.05)
    assert [u.tid for u in gone] == [busy] and 0.05 <= gone[0].cpu_s <= 1.0, gone
    # the contrasts: traced after all; less CPU than asked for; a thread born after
    assert missed(candidates, now, seen={busy}, min_cpu_s=0.05) == []
    assert missed(candidates, now, seen=set(), min_cpu_s=5.0) == []
    assert later not in {u.tid for u in missed(candidates, now, set(), 0.0)}


def test_a_thread_that_exited_or_a_tid_reused_is_not_named():
    born = Untraced(7, "w", 0.3, 0.1)
    assert missed([born], [], set(), 0.0) == []  # exited
    assert missed([born], [Untraced(7, "w", 2.0, 9.0)], set(), 0.0) == []  # reused
    # the same birth read twice may differ by a rounding: the same thread
    assert missed([born], [Untraced(7, "w", 0.301, 0.2)], set(), 0.0) == [
        Untraced(7, "w", 0.3, 0.1)
    ]
    assert missed([born], [Untraced(7, "w2", 0.3, 0.5)], set(), 0.2) == [
        Untraced(7, "w2", 0.3, 0.4)
    ]


def test_the_description_names_a_few_threads_and_says_what_is_missing():
    threads = [Untraced(100 + i, f"worker-{i}", 0.7, 0.25) for i in range(7)]
    text = describe(threads, 1.11, "scheduler events")
    assert text.startswith("perf did not trace 7 threads born while it attached (its events")
    assert "1.11 s" in text and "100 (worker-0, 0.25 s of CPU)" in text
    assert "and 2 more" in text and "scheduler events are missing" in text
    assert "106" not in text
    assert "1 thread born" in describe(threads[:1], None, "on-CPU stacks")
