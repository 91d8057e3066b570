"""Every child diagnose starts dies with diagnose (diagnose/spawn.py), on real processes.

A stand-in for diagnose (a Python process importing diagnose) starts one child of each
kind: a plain :func:`~diagnose.spawn.spawn` (SIGTERM), a collector helper
(:class:`~diagnose.collect.child.Child`, SIGINT), a demo's sample
(:class:`~diagnose.demo.SampleProcess`, which had no guard before) and the user's command
under ``run`` (:class:`~diagnose.run.LaunchedCommand`); then it is killed with SIGKILL, as
the OOM killer or an operator would. Each child would live 120 s on its own; all must be
gone within 15 s; also when diagnose was started as a shell's background job, with SIGINT
(the helpers' death signal) ignored and inherited."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from diagnose.spawn import run
from tests.conftest import ROOT

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]

PARENT = """
import json, signal, sys, time
if {background}:  # as in a shell's background job: SIGINT ignored, and inherited so
    signal.signal(signal.SIGINT, signal.SIG_IGN)
from diagnose.spawn import spawn
from diagnose.collect.child import Child
from diagnose.demo import SampleProcess
from diagnose.run import LaunchedCommand
sleeper = {sleeper!r}
kids = {{
    "spawn": spawn(sleeper).pid,
    "collector helper": Child(sleeper, {err!r}).pid,
    "demo sample": SampleProcess("idle_service", seconds=120).pid,
    "run command": LaunchedCommand(sleeper).pid,
}}
print(json.dumps(kids), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background-job"])
def test_every_kind_of_child_dies_with_diagnose(tmp_path, background):
    code = PARENT.format(
        sleeper=SLEEPER, err=str(tmp_path / "helper.stderr"), background=background
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    kids: dict[str, int] = {}
    try:
        assert parent.stdout is not None
        kids = json.loads(parent.stdout.readline())
        assert all(_alive(pid) for pid in kids.values()), kids
        # WHEN diagnose is killed outright
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in kids.values()):
            time.sleep(0.1)
        # THEN none of its children is left behind
        left = {name: pid for name, pid in kids.items() if _alive(pid)}
        assert not left, f"still running after diagnose died: {left}"
    finally:
        for pid in kids.values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_short_command_is_killed_at_its_timeout():
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run(SLEEPER, timeout=0.5)
    assert time.monotonic() - started < 60  # it did not wait for the command's 120 s
    mine = [
        p
        for p in psutil.Process().children(recursive=True)
        if "time.sleep(120)" in " ".join(p.cmdline())
    ]
    assert not mine, mine


def test_a_short_command_gives_its_output_and_status():
    res = run([sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], timeout=30)
    assert (res.returncode, res.stdout) == (3, "out\n")


HELD_AT_FORK = """
import os, sys, threading, time
from diagnose.spawn import run
lock = threading.Lock()
lock.acquire()  # held by this thread for good: a fork's child can never take it
# Python code run in the child between fork and exec would take it, as tracemalloc's hooks
# take theirs, and hang there (holding a copy of every descriptor, the capture lock's too)
os.register_at_fork(after_in_child=lock.acquire)
done = run(["true"], timeout=5)
print("exit", done.returncode, flush=True)
"""


def test_no_python_runs_between_fork_and_exec():
    # GIVEN a lock held at the fork that Python code in the child would wait on forever
    res = subprocess.run(
        [sys.executable, "-c", HELD_AT_FORK], capture_output=True, text=True, timeout=20,
        cwd=ROOT,
    )  # fmt: skip
    # THEN the child execs anyway: its settings are made by the shim after the exec
    assert res.stdout.strip() == "exit 0", res.stderr
