"""collect/tasks.py against this test's own process: its threads and their on-CPU times."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from diagnose.collect import tasks


def test_a_thread_started_is_listed_and_gone_once_it_ends():
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        ids = tasks.task_ids(os.getpid())
        assert t.native_id in ids and os.getpid() in ids and ids == sorted(ids)
    finally:
        stop.set()
        t.join()
    # join() returns once the thread's Python work ends; the kernel reaps it a moment later
    deadline = time.monotonic() + 10
    while t.native_id in tasks.task_ids(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert t.native_id not in tasks.task_ids(os.getpid())


def test_a_process_that_is_gone_has_no_threads_and_no_files():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert tasks.task_ids(child.pid) == []
    assert tasks.schedstats(child.pid) == {}
    assert tasks.read_task(child.pid, child.pid, "stat") == ""


def test_a_threads_on_cpu_time_grows_by_what_it_ran():
    tid = threading.get_native_id()
    pid = os.getpid()
    before = tasks.schedstats(pid)
    if tid not in before:
        pytest.skip("this kernel keeps no schedstat")
    end = time.process_time() + 0.05
    while time.process_time() < end:  # 50 ms of this thread's own CPU
        pass
    after = tasks.schedstats(pid)
    assert after[tid][0] - before[tid][0] >= 40_000_000
    assert tasks.read_task(pid, tid, "stat").startswith(f"{tid} (")
