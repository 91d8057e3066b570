"""perf script ``--no-demangle`` with diagnose demangling the distinct names
(formats/demangle.py): the stacks must read as perf's own demangling prints them, since the
rules match on that text (``at::native::*``, ``tokenizers::*``). The fixtures are one torch
service's on-CPU recording, printed twice by perf 6.1: with and without ``--no-demangle``
(every event with a mangled name not seen before: 92 events, 151 C++ and Rust v0 names)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from diagnose.bundle.writer import BundleWriter
from diagnose.collect.perf import sched
from diagnose.collect.perf.record import left_mangled
from diagnose.formats import demangle
from diagnose.formats.perf_sched import SchedSummary
from diagnose.formats.perf_script import (
    demangle_table,
    demangled_frames,
    frame_label,
    parse_script,
)
from diagnose.formats.stacks import StackTable
from tests.conftest import FIXTURES
from tests.unit.test_finish_fast import SCRIPT, context

PERF = FIXTURES / "demangle" / "torch-oncpu.script.txt"
MANGLED = FIXTURES / "demangle" / "torch-oncpu.no-demangle.txt"

needs_cxxfilt = pytest.mark.skipif(
    shutil.which("c++filt") is None, reason="no c++filt (binutils) on this host: perf demangles"
)


def _stacks(path: Path) -> list[tuple[str, ...]]:
    return [ev.stack for ev in parse_script(path.read_text().splitlines(keepends=True))]


@needs_cxxfilt
def test_this_hosts_cxxfilt_demangles_as_perf_does():
    assert demangle.probe() is not None


@needs_cxxfilt
def test_a_no_demangle_recording_reads_as_perfs_own_demangling():
    tool = demangle.probe()
    mangled, perf = _stacks(MANGLED), _stacks(PERF)
    assert len(mangled) == len(perf) == 92
    symbols = {f.rpartition(" (")[0] for s in mangled for f in s}
    assert len({sym for sym in symbols if demangle.is_mangled(sym)}) == 151
    table = StackTable()
    ids = [table.intern(s) for s in mangled]
    renames = demangle_table(table, tool)
    assert len({f.partition(" (")[0] for f in renames}) == 151
    assert [table.stacks[i] for i in ids] == perf
    assert any("tokenizers::" in f for s in perf for f in s)  # a Rust v0 name among them


def test_without_a_demangler_or_with_a_failing_one_names_stay_as_printed():
    frames = {f for s in _stacks(MANGLED) for f in s}
    assert demangled_frames(frames, None) == {}
    # a failing c++filt is told apart from nothing to demangle: None, not {}
    assert demangle.demangle(["_Z16THPVariable_WrapON2at10TensorBaseE"], "/bin/false") is None
    assert demangled_frames(frames, "/bin/false") is None
    assert demangle.demangle(["main", "PyEval_EvalFrameDefault"], "/bin/false") == {}


def test_a_failing_demangler_is_said_not_hidden(tmp_path: Path):
    # c++filt passed its probe, then failed on the recording's names: the frames stay
    # mangled, and the record must not say c++filt demangled them
    text = SCRIPT.read_text().replace(
        " __futex_wait (", " _Z16THPVariable_WrapON2at10TensorBaseE ("
    )
    summary = SchedSummary()
    sched.write_tables(
        context(BundleWriter.create(tmp_path / "a")),
        iter(text.splitlines(True)),
        summary,
        None,
        "/bin/false",
    )
    assert summary.mangled
    assert (
        "_Z16THPVariable_WrapON2at10TensorBaseE ("
        in (tmp_path / "a" / "sched" / "stacks.csv").read_text()
    )
    details = {"demangled_by": "c++filt"}
    note = left_mangled(details)
    assert details["demangled_by"] == "none" and "left mangled" in note
    ok = SchedSummary()
    sched.write_tables(
        context(BundleWriter.create(tmp_path / "b")),
        iter(SCRIPT.read_text().splitlines(True)),
        ok,
        None,
        "/bin/false",
    )
    assert not ok.mangled  # nothing mangled to demangle: c++filt is not even run


def test_a_long_mangled_name_is_kept_whole_for_demangling():
    sym = "_ZN" + "3abc" * 300 + "E"
    label = frame_label(sym, "/usr/lib/libx.so")
    assert label == f"{sym} (libx.so)"
    assert frame_label("f" * 1300, "/usr/lib/libx.so").endswith("... (libx.so)")


@needs_cxxfilt
def test_the_scheduler_tables_and_off_cpu_profile_are_demangled_too(tmp_path: Path):
    # the lock sample's trace with one libc frame swapped for a mangled C++ name: converted
    # with the demangler, its tables are those of the trace that had the readable name
    text = SCRIPT.read_text()
    wait = " __futex_wait ("
    assert wait in text
    mangled = text.replace(wait, " _Z16THPVariable_WrapON2at10TensorBaseE (")
    readable = text.replace(wait, " THPVariable_Wrap (")
    a, b = BundleWriter.create(tmp_path / "a"), BundleWriter.create(tmp_path / "b")
    tool = demangle.probe()
    sched.write_tables(context(a), iter(mangled.splitlines(True)), SchedSummary(), None, tool)
    sched.write_tables(context(b), iter(readable.splitlines(True)), SchedSummary(), None)
    for name in ("offcpu.csv", "futex.csv", "stacks.csv", "offcpu.folded"):
        got = (tmp_path / "a" / "sched" / name).read_text()
        assert got == (tmp_path / "b" / "sched" / name).read_text(), name
    assert "THPVariable_Wrap (" in (tmp_path / "a" / "sched" / "offcpu.folded").read_text()


def test_the_on_cpu_stacks_say_when_the_demangler_failed(tmp_path: Path):
    from diagnose.collect.perf.oncpu import PerfCollector

    w = BundleWriter.create(tmp_path / "a")
    lines = iter(MANGLED.read_text().splitlines(True))
    n, _, _, _, _, mangled = PerfCollector()._write(context(w), lines, "/bin/false")
    assert n > 0 and mangled
    assert "_ZN" in (tmp_path / "a" / "native" / "stacks.csv").read_text()
    if demangle.probe() is not None:  # the same recording with a working c++filt
        w = BundleWriter.create(tmp_path / "b")
        lines = iter(MANGLED.read_text().splitlines(True))
        assert PerfCollector()._write(context(w), lines, demangle.probe())[5] is False
