"""One capture per target process at a time (collect/session.py ``_TargetLock``): the lock
is named after the PID and the process's start time, so a diagnose left behind on a process
that exited does not lock out the next process given that PID."""

from __future__ import annotations

import os

import pytest

from diagnose.collect import session
from diagnose.collect.session import _TargetLock
from diagnose.errors import Busy


def test_a_lock_names_the_process_not_only_its_pid(monkeypatch):
    pid = 10**7 + os.getpid()  # above pid_max: no other test's target
    monkeypatch.setattr(session, "_start_time", lambda _pid: 111)
    old = _TargetLock(pid)
    old.acquire()
    try:
        # GIVEN a capture of an earlier process with this PID still holding its lock
        monkeypatch.setattr(session, "_start_time", lambda _pid: 222)
        new = _TargetLock(pid)
        new.acquire()  # THEN the new process is not locked out
        new.release()
        # AND the same process is
        monkeypatch.setattr(session, "_start_time", lambda _pid: 111)
        with pytest.raises(Busy):
            _TargetLock(pid).acquire()
    finally:
        old.release()


def test_the_start_time_is_read_from_proc():
    assert session._start_time(os.getpid()) > 0
    assert session._start_time(10**9) == 0  # no such process: the PID alone
