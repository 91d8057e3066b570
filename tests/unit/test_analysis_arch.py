"""A bundle analyses the same anywhere: system call numbers come from the machine the bundle
recorded, never from the host that analyses it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from diagnose.analyse.arch import (
    DEFAULT_MACHINE,
    SYSCALLS_AARCH64,
    SYSCALLS_X86_64,
    Syscalls,
    recorded_machine,
)
from diagnose.app.report import diagnose
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "bundles" / "lock_contention"
#: aarch64 has no poll, select or epoll_wait: its libc calls these instead
AARCH64_EQUIVALENT = {"poll": "ppoll", "select": "pselect6", "epoll_wait": "epoll_pwait"}


def _relabel(src: Path, dst: Path, machine: str, renumber: bool) -> Path:
    """A copy of ``src`` recorded on ``machine``; with ``renumber``, its threads' system
    call numbers are the same calls' numbers on that machine."""
    shutil.copytree(src, dst)
    system = json.loads((dst / "system.json").read_text())
    assert system["host"]["machine"] == "x86_64"
    system["host"]["machine"] = machine
    (dst / "system.json").write_text(json.dumps(system))
    if renumber:
        names = {nr: name for name, nr in SYSCALLS_X86_64.items()}
        threads = pd.read_csv(dst / "proc" / "threads.csv", dtype={"syscall": "Int64"})

        def renumbered(nr: Any) -> Any:
            if pd.isna(nr):
                return nr
            name = names[int(nr)]
            return SYSCALLS_AARCH64[AARCH64_EQUIVALENT.get(name, name)]

        threads["syscall"] = threads["syscall"].map(renumbered).astype("Int64")
        threads.to_csv(dst / "proc" / "threads.csv", index=False)
    return dst


def _analysed(bundle: Path) -> dict[str, Any]:
    """What the analysis and the rules make of ``bundle`` (not where or when it was read)."""
    report = diagnose(bundle).report
    return {k: report[k] for k in ("verdict", "findings", "metrics", "unmeasured", "locks")} | {
        "threads": report["threads"]
    }


@pytest.fixture(scope="module")
def x86_64() -> dict[str, Any]:
    return _analysed(FIXTURE)


def test_the_same_bundle_recorded_on_aarch64_gives_the_same_analysis(tmp_path, x86_64):
    # GIVEN the fixture (recorded on x86_64, a lock verdict) and a copy of it relabelled as
    # recorded on aarch64, with aarch64's numbers for the same system calls
    arm = _relabel(FIXTURE, tmp_path / "arm", "aarch64", renumber=True)
    # WHEN both are analysed here THEN everything the analysis says is the same
    assert x86_64["verdict"]["primary"] == "lock"
    assert x86_64["metrics"]["busy_share_lock"] > 0.5
    assert _analysed(arm) == x86_64


def test_the_recorded_machine_decides_which_numbers_are_read(tmp_path, x86_64):
    # GIVEN a copy that says aarch64 but kept x86_64's numbers (202, futex on x86_64, is
    # accept on aarch64) WHEN analysed THEN the threads no longer wait on locks: the
    # machine field, not the analysing host, chose the table
    wrong = _analysed(_relabel(FIXTURE, tmp_path / "wrong", "aarch64", renumber=False))
    assert wrong["metrics"]["busy_share_lock"] == 0.0
    assert wrong["verdict"]["primary"] != "lock"


def test_the_analysing_host_does_not_matter(x86_64):
    # GIVEN a Python process whose os.uname() says aarch64 from before diagnose is imported
    # (a table built at import time from the host would pick aarch64's numbers)
    script = (
        "import json, os, sys\n"
        "real = os.uname()\n"
        "os.uname = lambda: os.uname_result((real.sysname, real.nodename, real.release,"
        " real.version, 'aarch64'))\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from tests.unit.test_analysis_arch import _analysed\n"
        "from pathlib import Path\n"
        "print(json.dumps(_analysed(Path(sys.argv[1]))))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", script, str(FIXTURE), str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    # WHEN it analyses the x86_64 fixture THEN nothing changes
    assert json.loads(res.stdout) == json.loads(json.dumps(x86_64))


def test_recorded_machine_prefers_system_json_then_the_manifest():
    assert recorded_machine({"host": {"machine": "aarch64"}}, {"machine": "x86_64"}) == "aarch64"
    assert recorded_machine({}, {"machine": "aarch64"}) == "aarch64"
    assert recorded_machine({"host": {"machine": ""}}, {}) == DEFAULT_MACHINE
    assert recorded_machine({"host": "junk"}, {"machine": 3}) == DEFAULT_MACHINE


def test_a_machine_without_a_table_reads_no_numbers():
    # numbers of another architecture would be a guess: none are read
    calls = Syscalls.of("riscv64")
    assert not (calls.futex | calls.io | calls.poll | calls.accept | calls.sleep)
    # uname's and Debian's names of one machine read one table
    assert Syscalls.of("arm64").futex == Syscalls.of("aarch64").futex == {98, 449, 455}
    assert Syscalls.of("amd64").futex == Syscalls.of("x86_64").futex == {202, 449, 455}


def test_every_call_the_classifier_uses_has_a_number_on_both_machines():
    # aarch64 lacks poll, select and epoll_wait (its libc uses ppoll, pselect6, epoll_pwait);
    # every other call has its number in both tables
    x86, arm = Syscalls.of("x86_64"), Syscalls.of("aarch64")
    for group in ("futex", "io", "accept", "sleep"):
        assert len(getattr(arm, group)) == len(getattr(x86, group)), group
    assert len(x86.poll) - len(arm.poll) == 3
