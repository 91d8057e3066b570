"""diagnose run -- CMD: real commands started, captured, stopped, and never left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from diagnose.bundle import Bundle
from diagnose.errors import ExitCode
from tests.e2e.cli import alive, diagnose_argv, flat, kill_all, run_cli, sample_argv, wait_for

#: Where a test is about the command's life, not its stacks: without py-spy, whose late start
#: on a loaded 2-core machine can make a short capture partial (exit 5) for its own reasons.
PROC_ONLY = ("--collectors", "proc")


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def test_runs_a_sample_and_stops_it_after_the_capture(tmp_path):
    # GIVEN a sample service that would run for a minute
    out = tmp_path / "b"
    # WHEN diagnose runs it with a 3 s capture
    res = run_cli(
        "run", "-d", "3", "--warmup", "1", "-o", str(out), *PROC_ONLY, "--",
        *sample_argv("lock_contention", "--threads", "4", "--seconds", "60"),
    )  # fmt: skip
    # THEN the capture is complete, the command was stopped with SIGTERM and exited cleanly
    assert res.returncode == 0, res.stderr
    m = manifest(out)
    assert m["state"] == "complete"
    assert m["capture"]["ended_by"] == "duration"
    run = m["capture"]["run"]
    assert run["stopped_by"] == "SIGTERM"
    assert run["exit_code"] == 0
    assert run["exited_before_capture_end"] is False
    assert run["pid"] == m["target"]["pid"]
    assert 3.5 < run["ran_s"] < 30
    # the command's own output passes through (the sample prints its stats when stopped)
    stats = json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith('{"sample"')))
    assert stats["threads"] == 4
    assert "exited with code 0 after diagnose stopped it (SIGTERM)" in flat(res.stdout)
    assert (out / "report.json").is_file()
    assert not alive([run["pid"]])


def test_json_keeps_stdout_one_document(tmp_path):
    res = run_cli(
        "run", "-d", "2", "--warmup", "1", "-o", str(tmp_path / "b"), "--json", *PROC_ONLY, "--",
        *sample_argv("lock_contention", "--threads", "2", "--seconds", "60"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)  # the sample's stats line went to stderr
    assert report["capture"]["run"]["exit_code"] == 0
    assert report["capture"]["run"]["stopped_by"] == "SIGTERM"
    assert '{"sample": "lock_contention"' in res.stderr


def test_command_that_exits_early_gives_a_partial_bundle_still_reported(tmp_path):
    # GIVEN a sample that ends by itself about 1.5 s into a 12 s capture (a long window: on
    # a loaded host the sample's imports can take seconds, and ending early must still be
    # told from ending on time)
    out = tmp_path / "b"
    res = run_cli(
        "run", "-d", "12", "--warmup", "0.8", "-o", str(out), "--",
        *sample_argv("lock_contention", "--threads", "2", "--seconds", "2.5"),
    )  # fmt: skip
    # THEN exit code 5, a complete manifest that says so, and a report
    assert res.returncode == 5, res.stderr
    m = manifest(out)
    assert m["state"] == "complete"
    assert m["capture"]["ended_by"] == "target_exited"
    assert m["capture"]["duration_actual"] < 8
    run = m["capture"]["run"]
    assert run["exit_code"] == 0 and run["signal"] is None
    assert run["exited_before_capture_end"] is True
    assert run["stopped_by"] is None
    assert (out / "report.md").is_file()
    assert "before the capture ended" in flat(res.stdout)


def test_command_that_fails_mid_capture_reports_its_exit_code(tmp_path):
    # GIVEN a Python command that fails with code 7 two seconds after it started
    out = tmp_path / "b"
    script = "import sys, time\ntime.sleep(2.5)\nsys.exit(7)\n"
    res = run_cli(
        "run", "-d", "5", "--warmup", "0.5", "-o", str(out), "--json", "--",
        sys.executable, "-c", script,
    )  # fmt: skip
    # THEN a partial bundle (5) whose report carries the command's exit code
    assert res.returncode == 5, res.stderr
    report = json.loads(res.stdout)
    assert report["capture"]["run"]["exit_code"] == 7
    assert report["capture"]["ended_by"] == "target_exited"
    assert manifest(out)["capture"]["run"]["exit_code"] == 7


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no-such-command-xyz"], "cannot start 'no-such-command-xyz': command not found"),
        ([sys.executable, "-c", "import sys; sys.exit(4)"], "exited with code 4"),
        (
            [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
            "killed by SIGKILL",
        ),
    ],
    ids=["not-found", "exit-4", "killed"],
)
def test_command_that_fails_to_start_is_a_clear_error(tmp_path, argv, message):
    out = tmp_path / "b"
    res = run_cli("run", "--warmup", "1", "-o", str(out), "--", *argv)
    assert res.returncode == 3
    assert message in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr  # one line, no traceback
    assert not out.exists()  # no capture began: nothing written


def test_bad_arguments(tmp_path):
    assert run_cli("run").returncode == 2  # no command
    res = run_cli("run", "--warmup", "-1", "--", "true")
    assert res.returncode == 2 and "--warmup" in res.stderr
    res = run_cli("run", "--format", "pdf", "--", "true")
    assert res.returncode == 2 and "pdf" in res.stderr


def _start_run(
    tmp_path: Path,
    *cmd: str,
    duration: str = "30",
    extra: tuple[str, ...] = (),
    warmup: str = "0.5",
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        diagnose_argv(
            "run",
            "-d",
            duration,
            "--warmup",
            warmup,
            "-o",
            str(tmp_path / "b"),
            *extra,
            "--",
            *cmd,
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _group_of_command(proc: subprocess.Popen[str]) -> list[int]:
    """The PIDs in the process group of the command diagnose started, once it has two."""
    found: list[int] = []

    def started() -> bool:
        for child in psutil.Process(proc.pid).children():
            try:
                if child.name() in ("py-spy", "perf") or "diagnose-run-guard" in child.cmdline():
                    continue
                found[:] = [
                    p.pid
                    for p in psutil.process_iter()
                    if _pgid(p.pid) == child.pid and p.status() != psutil.STATUS_ZOMBIE
                ]
            except psutil.Error:
                continue
        return len(found) >= 3  # the shell and its two Python services

    wait_for(started, 20, "the command and its children")
    return found


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _py_spys_of(pids: list[int]) -> list[int]:
    out = []
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if p.info["name"] == "py-spy" and any(str(pid) in cmd for pid in pids):
            out.append(p.pid)
    return out


# a command with a child of its own: the shell stays (it waits), the samples are its children
def _shell_with_children() -> list[str]:
    sample = " ".join(sample_argv("lock_contention", "--threads", "2", "--seconds", "120"))
    return ["/bin/sh", "-c", f"{sample} & {sample}; wait"]


def test_killed_diagnose_takes_the_command_and_its_children_along(tmp_path):
    # GIVEN diagnose running a shell that started two Python services, mid-capture
    proc = _start_run(tmp_path, *_shell_with_children())
    pids: list[int] = []
    try:
        pids = _group_of_command(proc)
        wait_for(lambda: (tmp_path / "b" / "manifest.json").exists(), 20, "the capture to start")
        # WHEN diagnose is killed outright (no chance to clean up)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        # THEN the whole command goes: PDEATHSIG and the guard's SIGTERM to its group
        wait_for(lambda: not alive(pids), 10, f"the command's processes {pids} to exit")
        wait_for(lambda: not _py_spys_of(pids), 10, "py-spy to exit")
    finally:
        kill_all(pids)
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_capture_still_reports_and_stops_the_command(tmp_path, sig):
    # GIVEN diagnose capturing a command for 30 s (one of its two services: what is tested
    # here is the command's end; every worker's capture interrupted: test_target_selection)
    # (warmed up until the services have their threads: perf -p lists a process's threads
    # once, as it starts, so a thread made while it attaches is not traced. In one pair CI
    # run, with a 0.5 s warm-up, the lock service's two threads started while perf_sched
    # was setting up (0.67 and 0.79 s; its events on at 1.11 s), and it rightly said it
    # recorded nothing of 0.35 CPU-s: partial, exit 5)
    proc = _start_run(tmp_path, *_shell_with_children(), extra=("--workers", "busiest"), warmup="3")
    pids: list[int] = []
    try:
        pids = _group_of_command(proc)
        wait_for(lambda: (tmp_path / "b" / "manifest.json").exists(), 20, "the capture to start")
        wait_for(lambda: "running" in manifest(tmp_path / "b").get("capture", {}), 20, "collectors")
        time.sleep(1.5)  # let the samplers record something
        # WHEN it gets Ctrl-C or SIGTERM
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        # THEN the capture ends early but completely, and the command is stopped
        m = manifest(tmp_path / "b")
        assert proc.returncode == 0, (err, m["collectors"])
        assert m["state"] == "complete"
        assert m["capture"]["ended_by"] == f"interrupted ({sig.name})"
        assert m["capture"]["run"]["stopped_by"] == "SIGTERM"
        assert not alive(pids)
        Bundle.open(tmp_path / "b")
        assert (tmp_path / "b" / "report.json").is_file()
    finally:
        kill_all(pids)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def test_terminated_during_warm_up_stops_the_command(tmp_path):
    proc = subprocess.Popen(
        diagnose_argv("run", "--warmup", "30", "-o", str(tmp_path / "b"), "--",
                      *_shell_with_children()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    pids: list[int] = []
    try:
        pids = _group_of_command(proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == ExitCode.INTERRUPTED == 130, err
        assert "interrupted" in err
        assert not alive(pids)
        assert not (tmp_path / "b").exists()
    finally:
        kill_all(pids)
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def test_unusable_output_fails_before_the_command_starts(tmp_path):
    # GIVEN an output directory that already holds something
    out = tmp_path / "b"
    out.mkdir(mode=0o700)  # private, as --out asks: only its content is wrong
    (out / "keep.txt").write_text("mine")
    marker = tmp_path / "started"
    # WHEN diagnose run is pointed at it
    res = run_cli("run", "-o", str(out), "--", "touch", str(marker))
    # THEN exit code 6 at once, the command never ran, and the directory is untouched
    assert res.returncode == ExitCode.OUTPUT == 6
    assert "not empty" in res.stderr
    assert not marker.exists()
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_signal_while_the_command_starts_stops_it_and_its_children(monkeypatch):
    # GIVEN a SIGTERM that reaches diagnose after the command started, before its guard did
    from diagnose.run import LaunchedCommand, terminate_is_interrupt

    started: list[int] = []
    start_guard = LaunchedCommand._start_guard

    def signalled_first(self: LaunchedCommand) -> None:
        started.append(self.pgid)
        wait_for(lambda: len(_members_of(self.pgid)) >= 3, 20, "the shell's two children")
        os.kill(os.getpid(), signal.SIGTERM)
        start_guard(self)

    monkeypatch.setattr(LaunchedCommand, "_start_guard", signalled_first)
    # WHEN it unwinds as an interrupt
    with terminate_is_interrupt(), pytest.raises(KeyboardInterrupt):
        LaunchedCommand(["/bin/sh", "-c", "sleep 120 & sleep 120 & wait"])
    # THEN the command's whole group is gone, its children included (PDEATHSIG alone
    # would reach the shell only, and not before diagnose itself exited)
    assert started
    try:
        assert not _members_of(started[0])
    finally:
        kill_all(_members_of(started[0]))


def _members_of(pgid: int) -> list[int]:
    return [p.pid for p in psutil.process_iter() if _pgid(p.pid) == pgid and alive([p.pid])]
