"""Two captures of the same process: the second fails at once with exit code 9 and one line,
never waits and never touches the first one's bundle; the lock lives and dies with its
holder and is not a file another user could plant a symlink at."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from diagnose.collect.session import _TargetLock
from diagnose.errors import Busy, ExitCode
from tests.conftest import run_sample
from tests.e2e.cli import kill_all, run_cli, sample_argv, wait_for
from tests.e2e.safety import settled_health, start_attach, wait_no_helpers
from tests.e2e.test_exit_codes import one_line_error

PROC_ONLY = ("--collectors", "proc")


def _window_opened(out: Path) -> bool:
    try:
        capture = json.loads((out / "manifest.json").read_text())["capture"]
    except (OSError, ValueError, KeyError):
        return False  # being rewritten
    return bool(capture.get("window_start_s"))


def assert_complete_bundle(out: Path) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["state"] == "complete", manifest["capture"]
    res = run_cli("report", str(out), "--format", "json", "-o", str(out / "again.json"), "-q")
    assert res.returncode == 0, res.stderr


def test_second_capture_fails_at_once_while_the_first_goes_on(tmp_path):
    with run_sample("lock_contention", "--threads", "2", seconds=60) as s:
        first = start_attach(s.pid, tmp_path / "first", 12)
        try:
            wait_for(lambda: (tmp_path / "first" / "manifest.json").exists(), 30, "capture 1")
            # WHEN a second capture of the same process starts
            res = run_cli("attach", str(s.pid), "-d", "2", "-o", str(tmp_path / "second"))
            # THEN it has failed before the first one ended: it did not wait for the lock
            assert first.poll() is None, "the first capture ended before the second returned"
            # and the first one measures: its window opened (perf may take seconds to start
            # on a loaded host; stopped before, it is rightly partial) and ran a while
            wait_for(lambda: _window_opened(tmp_path / "first"), 60, "capture 1's window")
            time.sleep(1.5)
        finally:
            first.send_signal(signal.SIGINT)
            _, err = first.communicate(timeout=90)
        assert settled_health(s.pid).ok
    assert res.returncode == ExitCode.BUSY == 9, res.stderr
    line = one_line_error(res)
    assert f"another diagnose capture of PID {s.pid} is running (diagnose PID {first.pid})" in line
    assert not (tmp_path / "second").exists()
    assert first.returncode == 0, err
    assert_complete_bundle(tmp_path / "first")


def test_captures_started_together_one_wins_the_others_fail_cleanly(tmp_path):
    # GIVEN three captures of one process started at the same moment
    with run_sample("lock_contention", "--threads", "2", seconds=60) as s:
        procs = [start_attach(s.pid, tmp_path / f"b{i}", 3, *PROC_ONLY) for i in range(3)]
        results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
        assert not wait_no_helpers(s.pid, 5)
        assert settled_health(s.pid).ok
    # THEN each either captured (0) or failed at once with exit 9 and nothing written
    codes = [rc for rc, _ in results]
    assert set(codes) <= {0, 9}, results
    assert 0 in codes, results
    for i, (rc, err) in enumerate(results):
        out = tmp_path / f"b{i}"
        if rc == 0:
            assert_complete_bundle(out)
        else:
            assert err.strip().startswith("diagnose: error: another diagnose capture"), err
            assert len(err.strip().splitlines()) == 1, err
            assert not out.exists()


def test_the_same_process_through_its_wrapper_is_the_same_capture(tmp_path):
    # GIVEN a shell wrapper whose Python child does the work, being captured by its own PID
    script = " ".join(sample_argv("lock_contention", "--threads", "2", "--seconds", "60"))
    wrapper = subprocess.Popen(["sh", "-c", f"{script}; true"], stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: _python_child(wrapper.pid) is not None, 20, "the wrapped service")
        child = _python_child(wrapper.pid)
        assert child is not None
        first = start_attach(child, tmp_path / "first", 12, *PROC_ONLY)
        try:
            wait_for(lambda: (tmp_path / "first" / "manifest.json").exists(), 30, "capture 1")
            # WHEN diagnose is pointed at the wrapper, which it follows to the same child
            res = run_cli("attach", str(wrapper.pid), "-d", "2", "-o", str(tmp_path / "second"))
        finally:
            first.send_signal(signal.SIGINT)
            first.communicate(timeout=90)
    finally:
        kill_all([p for p in (_python_child(wrapper.pid), wrapper.pid) if p])
        wrapper.wait()
    # THEN it is the same capture: exit 9
    assert res.returncode == 9, res.stderr
    assert f"capture of PID {child} is running" in one_line_error(res)
    assert_complete_bundle(tmp_path / "first")


def _python_child(pid: int) -> int | None:
    try:
        kids = psutil.Process(pid).children()
    except psutil.Error:
        return None
    return next((k.pid for k in kids if "python" in k.name()), None)


def test_the_lock_goes_with_a_killed_capture(tmp_path):
    # GIVEN a capture that is killed outright (no chance to clean up)
    with run_sample("lock_contention", "--threads", "2", seconds=60) as s:
        first = start_attach(s.pid, tmp_path / "first", 30, *PROC_ONLY)
        wait_for(lambda: (tmp_path / "first" / "manifest.json").exists(), 30, "capture 1")
        first.send_signal(signal.SIGKILL)
        first.wait()
        # WHEN the next capture starts at once
        res = run_cli("attach", str(s.pid), "-d", "2", "-o", str(tmp_path / "second"), *PROC_ONLY)
    # THEN it is not refused: the kernel released the lock with its holder
    assert res.returncode == 0, res.stderr
    assert_complete_bundle(tmp_path / "second")


def test_the_lock_is_not_a_file_another_user_could_redirect(tmp_path):
    # GIVEN a symlink planted where diagnose used to keep its lock file, pointing at a file
    # that must not change (a local user could point it at /etc/shadow)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    with run_sample("lock_contention", "--threads", "2", seconds=60) as s:
        planted = Path(tempfile.gettempdir()) / f"diagnose-{s.pid}.lock"
        planted.unlink(missing_ok=True)
        planted.symlink_to(victim)
        try:
            res = run_cli("attach", str(s.pid), "-d", "1", "-o", str(tmp_path / "b"), *PROC_ONLY)
            still_a_link = planted.is_symlink()
        finally:
            planted.unlink()
    # THEN the capture works and neither the victim nor the planted link was touched
    assert res.returncode == 0, res.stderr
    assert victim.read_text() == "precious\n"
    assert still_a_link


def test_lock_holder_pid_is_the_running_capture():
    # the PID in the message comes from the kernel (SO_PEERCRED), not from a file. The lock
    # is an abstract socket, one per host: the target PID is this test process's own number
    # above pid_max, so that two suites running at once do not take each other's lock
    target = 10**7 + os.getpid()
    code = (
        "from diagnose.collect.session import _TargetLock\n"
        "import sys, time\n"
        f"lock = _TargetLock({target}); lock.acquire(); print('held', flush=True); time.sleep(30)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        try:
            _TargetLock(target).acquire()
        except Busy as exc:
            assert f"(diagnose PID {holder.pid})" in str(exc)
        else:
            raise AssertionError("a second lock of the same PID was granted")
    finally:
        holder.kill()
        holder.wait()
    lock = _TargetLock(target)
    lock.acquire()  # free again once its holder is gone
    lock.release()
