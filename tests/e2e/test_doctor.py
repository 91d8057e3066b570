"""diagnose doctor on this host (perf present, no hardware PMU, root), for a real target,
and with perf taken off PATH. Runs the real command as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, is_root

TARGET = ROOT / "tests" / "targets" / "perf_target.py"


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "diagnose", "doctor", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
        cwd=ROOT,
    )


def checks(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_this_host_perf_without_pmu():
    res = doctor("--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    c = checks(rep)
    assert c["perf"]["ok"] and rep["perf"]["version"]
    # software events and tracepoints work here (as root); the PMU does not exist
    assert c["perf cpu_clock"]["ok"]
    if is_root():
        assert c["perf sched_tracepoints"]["ok"] and c["perf futex_tracepoints"]["ok"]
    assert not c["perf hw_events"]["ok"] and "PMU" in c["perf hw_events"]["fix"]
    assert not c["perf mem_sampling"]["ok"] and c["perf mem_sampling"]["fix"]
    assert rep["collectors"]["perf"]["can_run"]
    assert not rep["collectors"]["c2c"]["can_run"]
    assert not rep["collectors"]["perf_stat"]["can_run"]
    assert c["cpu capacity"]["ok"] and "usable CPUs" in c["cpu capacity"]["detail"]


@pytest.mark.skipif(not is_root(), reason="ptrace of another process needs root here")
def test_for_a_python_target():
    proc = subprocess.Popen(
        [sys.executable, str(TARGET), "gil", "--seconds", "60", "--threads", "2"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        res = doctor(str(proc.pid), "--json")
        text = doctor(str(proc.pid))
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["target"]["pid"] == proc.pid and rep["target"]["is_python"]
    c = checks(rep)
    assert c["privileges"]["ok"] and c["ptrace"]["ok"]
    v = sys.version_info
    assert c["py-spy"]["ok"] and f"Python {v.major}.{v.minor}" in c["py-spy"]["detail"]
    if shutil.which("perf"):
        assert c["perf attach"]["ok"]
    # the terminal form: one line per check, a fix under each "no"
    assert text.returncode == 0
    assert f"Target: PID {proc.pid}" in text.stdout and "[ok] ptrace" in text.stdout
    assert "[no] perf hw_events" in text.stdout and "fix:" in text.stdout
    # wrapped to the width (issue 41: the PMU fix ran to 181 characters), continued indented
    assert all(len(ln) <= 120 for ln in text.stdout.splitlines()), text.stdout


def test_for_a_target_that_is_not_python():
    # GIVEN a native process (sleep)
    proc = subprocess.Popen(["sleep", "60"])
    try:
        res = doctor(str(proc.pid), "--json")
        text = doctor(str(proc.pid))
    finally:
        proc.kill()
        proc.wait()
    assert res.returncode == 0 and text.returncode == 0, res.stderr + text.stderr
    rep = json.loads(res.stdout)
    assert rep["target"]["is_python"] is False
    # THEN py-spy and the GIL collector do not apply, and are listed nowhere as runnable
    for name in ("pyspy", "gil"):
        assert rep["collectors"][name] == {
            "can_run": False,
            "applies": False,
            "why_not": checks(rep)["python"]["detail"],
        }, name
    assert rep["collectors"]["proc"] == {"can_run": True, "applies": True, "why_not": ""}
    lines = {
        ln.split(":", 1)[0]: ln.split(":", 1)[1] for ln in text.stdout.splitlines() if ":" in ln
    }
    runnable = lines["Collectors that can run"].replace(",", " ").split()
    assert "pyspy" not in runnable and "gil" not in runnable and "proc" in runnable
    moot = lines["Collectors that do not apply to this target"].split(",")
    assert [n.strip() for n in moot] == ["pyspy", "gil"]


def test_perf_taken_off_path(tmp_path):
    # GIVEN a PATH without perf (py-spy is found next to the interpreter)
    env = {**os.environ, "PATH": str(tmp_path)}
    res = doctor("--json", env=env)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    c = checks(rep)
    assert not c["perf"]["ok"]
    assert "not installed" in c["perf"]["detail"] and "linux-perf" in c["perf"]["fix"]
    for name in ("perf", "perf_sched", "perf_stat", "c2c"):
        assert not rep["collectors"][name]["can_run"], name
    assert rep["collectors"]["proc"]["can_run"]


def test_no_such_pid_exits_3():
    pid = 4_000_000  # above the kernel's pid_max
    res = doctor(str(pid))
    assert res.returncode == 3
    assert res.stderr.strip().startswith("diagnose: error:") and str(pid) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_bad_argument_exits_2():
    res = doctor("not-a-pid")
    assert res.returncode == 2
