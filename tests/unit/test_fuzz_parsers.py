"""Property-based fuzzing of the parsers of what the tools and the kernel print
(diagnose/formats/*, collect/procfs.py). Whatever the text, a parser returns its result or
raises its one documented error (FormatError for the tools' outputs, ValueError for /proc),
which its caller turns into a collector status with a reason; nothing else escapes. Where
the target controls part of the text (thread names, frames), what it wrote comes back
exactly, whatever characters it holds."""

from __future__ import annotations

import io
import json
import math

from hypothesis import given
from hypothesis import strategies as st

from diagnose.collect import procfs
from diagnose.formats.pyspy import (
    FormatError,
    chrometrace_intervals,
    explain_failure,
    parse_raw,
    parse_summary,
)
from diagnose.formats.speedscope import (
    intervals_to_speedscope,
    samples_to_speedscope,
    write_evented_speedscope,
)
from diagnose.formats.stacks import (
    Interval,
    StackTable,
    ThreadFrame,
    clean_frame,
    format_folded,
    parse_folded,
)
from tests.unit.fuzzing import fuzz

FUZZ = fuzz(400)

any_text = st.text(max_size=300)
digits_and_noise = st.text(alphabet="0123456789 -+x\n\t()abcdefRSTZ:", max_size=200)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)
# what the target controls: any Unicode py-spy passes on (it drops lone surrogates)
names = st.text(st.characters(blacklist_categories=["Cs"]), max_size=60)


def _returns_or_raises(fn, arg, error: type[Exception]):  # type: ignore[no-untyped-def]
    try:
        return fn(arg)
    except error as exc:
        assert str(exc)
        return None


# -- /proc ----------------------------------------------------------------------------------
@FUZZ
@given(st.one_of(any_text, digits_and_noise))
def test_proc_parsers_return_or_raise_value_error(text):
    for fn in (
        procfs.parse_stat,
        procfs.parse_schedstat,
        procfs.parse_syscall,
        procfs.parse_cpu_list,
    ):
        _returns_or_raises(fn, text, ValueError)
    assert isinstance(procfs.parse_status(text), dict)
    assert procfs.parse_sched_migrations(text) is None or isinstance(
        procfs.parse_sched_migrations(text), int
    )
    for cpu, (busy, total) in procfs.parse_proc_stat_cpus(text).items():
        assert isinstance(cpu, int) and isinstance(busy, int) and isinstance(total, int)


@FUZZ
@given(st.text(alphabet="0123456789,-", max_size=40))
def test_cpu_lists_are_bounded(text):
    # a range like 0-99999999999 must not allocate a list of that size
    cpus = _returns_or_raises(procfs.parse_cpu_list, text, ValueError)
    assert cpus is None or len(cpus) <= procfs.MAX_CPUS


stat_numbers = st.lists(st.integers(0, 2**63), min_size=49, max_size=49)


@FUZZ
@given(st.text(max_size=64), st.sampled_from("RSDTtZXI"), stat_numbers)
def test_a_stat_line_gives_back_any_thread_name_exactly(comm, state, numbers):
    # GIVEN the line the kernel writes for a thread whose name holds anything: parentheses,
    # spaces, newlines, a fake ") R 1 2 3" tail
    line = f"4242 ({comm}) {state} " + " ".join(map(str, numbers)) + "\n"
    st_ = procfs.parse_stat(line)
    # THEN the name and every field come back as written
    assert st_.comm == comm
    assert st_.state == state
    assert (st_.utime, st_.stime) == (numbers[14 - 4], numbers[15 - 4])
    assert st_.num_threads == numbers[20 - 4]
    assert st_.processor == numbers[39 - 4]


# -- py-spy -------------------------------------------------------------------------------
events = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["B", "E", "X", "M"]),
        "ts": st.one_of(st.integers(-5, 10**7), st.floats(), st.text(max_size=3), st.none()),
        "tid": st.one_of(st.integers(0, 3), st.text(max_size=2)),
        "name": st.one_of(
            st.sampled_from(["thread (1): a", "thread (0x1f): b", "f", "thread (x)", ""]),
            st.builds(lambda t, n: f"thread ({t}): {n}", st.integers(0, 2**40), names),
            names,
            st.integers(),
        ),
    },
    optional={"args": json_values, "pid": json_values},
)


@FUZZ
@given(st.one_of(json_values, st.lists(events, max_size=40)), st.floats(-1e6, 1e6))
def test_chrometrace_gives_intervals_or_format_error(data, offset):
    try:
        intervals, thread_names = chrometrace_intervals(data, offset)
    except FormatError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    for iv in intervals:
        assert iv.end > iv.start and math.isfinite(iv.start) and math.isfinite(iv.end)
        assert iv.tid in thread_names
    # what it returns converts to every bundle form without error
    json.dumps(intervals_to_speedscope(intervals, thread_names, "x"), allow_nan=False)
    format_folded(((str(iv.tid), *iv.stack), iv.end - iv.start) for iv in intervals)


@FUZZ
@given(st.integers(0, 2**40), names, st.lists(names, min_size=1, max_size=6))
def test_chrometrace_gives_back_any_thread_and_function_name_exactly(tid, thread, funcs):
    root = f"thread ({tid}): {thread}"
    opened = [{"ph": "B", "ts": 0, "tid": 7, "name": root}] + [
        {"ph": "B", "ts": 0, "tid": 7, "name": f, "args": {"filename": "x.py", "line": 3}}
        for f in funcs
    ]
    closed = [{"ph": "E", "ts": 2000, "tid": 7, "name": e["name"]} for e in reversed(opened)]
    intervals, thread_names = chrometrace_intervals(opened + closed)
    assert thread_names == {tid: thread}
    assert [iv.stack for iv in intervals] == [tuple(f"{f} (x.py:3)" for f in funcs)]


@FUZZ
@given(any_text)
def test_raw_folded_and_messages_never_raise(text):
    for tid, _name, stack, count in parse_raw(text):
        assert isinstance(tid, int) and count >= 0 and isinstance(stack, tuple)
    samples, errors = parse_summary(text)
    assert (samples is None) == (errors is None)
    message = explain_failure(text, 42)
    assert message and "\n" not in message


# -- folded stacks and speedscope ---------------------------------------------------------
stacks = st.lists(names.filter(bool), min_size=1, max_size=5).map(tuple)


@FUZZ
@given(st.lists(st.tuples(stacks, st.floats(0, 1e9)), max_size=20))
def test_folded_round_trip_keeps_every_stack_whatever_its_names_hold(rows):
    # GIVEN frames holding ';', newlines, U+2028 and other line breaks, spaces
    text = format_folded(rows)
    # THEN each stack is one line, read back as written (separators made harmless)
    totals: dict[tuple[str, ...], float] = {}
    for stack, weight in rows:
        totals[stack] = totals.get(stack, 0) + weight
    expected = sorted(
        (tuple(clean_frame(f) for f in stack), float(round(w)))
        for stack, w in totals.items()
        if round(w) > 0
    )
    assert sorted(parse_folded(text)) == expected


@FUZZ
@given(st.lists(st.tuples(stacks, st.one_of(st.floats(), st.integers()))))
def test_folded_ignores_weights_it_cannot_write(rows):
    for line in format_folded(rows).split("\n")[:-1]:
        assert line.rpartition(" ")[2].isdigit()


intervals = st.builds(
    Interval,
    st.integers(0, 5),
    st.floats(-1e6, 1e6),
    st.floats(-1e6, 1e6),
    stacks,
)


@FUZZ
@given(st.lists(intervals, max_size=30), st.dictionaries(st.integers(0, 5), names))
def test_speedscope_is_valid_json_for_any_intervals(ivs, thread_names):
    doc = intervals_to_speedscope(ivs, thread_names, "x")
    json.dumps(doc, allow_nan=False)
    frames = doc["shared"]["frames"]
    for profile in doc["profiles"]:
        depth = 0
        for ev in profile["events"]:
            assert 0 <= ev["frame"] < len(frames)
            depth += 1 if ev["type"] == "O" else -1
            assert depth >= 0
        assert depth == 0  # every frame opened is closed


@FUZZ
@given(st.lists(intervals, max_size=30), st.dictionaries(st.integers(0, 5), names))
def test_streamed_speedscope_is_the_same_document(ivs, thread_names):
    # the file written one thread at a time (long captures) is the one built in memory
    fh = io.StringIO()
    by_tid: dict[int, list[Interval]] = {}
    for iv in ivs:
        by_tid.setdefault(iv.tid, []).append(iv)
    threads = ((tid, thread_names.get(tid, ""), by_tid[tid]) for tid in sorted(by_tid))
    write_evented_speedscope(fh, threads, "x")
    assert json.loads(fh.getvalue()) == intervals_to_speedscope(ivs, thread_names, "x")


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 3), stacks, st.floats(0, 1e6)), max_size=20))
def test_sampled_speedscope_for_any_samples(samples):
    doc = samples_to_speedscope(samples, {}, "x", "milliseconds")
    json.dumps(doc, allow_nan=False)


@FUZZ
@given(st.one_of(any_text, st.builds(lambda s: "thread (" + s, any_text)))
def test_thread_frames_parse_or_are_none(text):
    parsed = ThreadFrame.parse(text)
    assert parsed is None or (isinstance(parsed.tid, int) and isinstance(parsed.name, str))


@FUZZ
@given(st.integers(0, 2**40), names)
def test_thread_frames_round_trip(tid, name):
    # GIVEN any thread id and name WHEN written as a root frame and read back THEN the same
    assert ThreadFrame.parse(ThreadFrame(tid, name).format()) == ThreadFrame(tid, name)


@FUZZ
@given(st.lists(stacks, max_size=30))
def test_stack_table_interns_each_stack_once(rows):
    table = StackTable()
    ids = [table.intern(s) for s in rows]
    assert [table.stacks[i] for i in ids] == rows
    assert len(table.stacks) == len(set(rows))
