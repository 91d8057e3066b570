"""perf script text -> events, and events -> off-CPU / futex rows (hand-built inputs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.formats import perf_script
from diagnose.formats.perf_c2c import C2cFormatError, parse_c2c
from diagnose.formats.perf_sched import FutexWait, OffCpu, SchedSummary, convert, futex_cmd
from diagnose.formats.perf_script import (
    LOST,
    SWITCH_IN,
    SWITCH_OUT,
    PerfEvent,
    frame_label,
    futex_enter,
    futex_exit,
    parse_script,
    switch_state,
    wakeup_target,
)
from tests.conftest import FIXTURES


def test_header_callchain_and_switch_records():
    text = """\
11857 [000]  1594.391583036:       sched:sched_switch: prev_comm=python prev_pid=11857 prev_prio=120 prev_state=S ==> next_comm=x next_pid=1 next_prio=120
\tffffffff821facd8 __schedule ([kernel.kallsyms])
\t           8612b __GI___lll_lock_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)
\tffffffffffffffff [unknown] ([unknown])

11857 [000]  1594.391609956: PERF_RECORD_SWITCH OUT preempt
11855 [001]  1594.391613732: PERF_RECORD_SWITCH IN{pad}
    0 [001]  1594.4: PERF_RECORD_LOST lost 17
""".format(pad=" " * 9)  # perf pads the line
    evs = list(parse_script(text.splitlines(keepends=True)))
    assert [e.event for e in evs] == ["sched:sched_switch", SWITCH_OUT, SWITCH_IN, LOST]
    sw = evs[0]
    assert (sw.tid, sw.cpu, sw.t) == (11857, 0, 1594.391583036)
    # leaf first, library shortened to its file name, the unknown frame dropped
    assert sw.stack == ("__schedule ([kernel.kallsyms])", "__GI___lll_lock_wait (libc.so.6)")
    assert switch_state(sw) == "S"
    assert evs[1].fields == "preempt" and evs[2].fields == ""
    assert evs[3].lost == 17


@pytest.mark.parametrize("remembered", [0, 1, 200_000])
def test_frame_lines_that_recur_give_the_same_stacks_whatever_is_remembered(
    monkeypatch, remembered
):
    # GIVEN the same call chain in many events (each distinct frame line parsed once)
    monkeypatch.setattr(perf_script, "_MAX_LABELS", remembered)
    chain = "\tffffffff821facd8 __schedule ([kernel.kallsyms])\n\t 85f16 f (/lib/libc.so.6)\n"
    other = "\t 9a0 g (/lib/libm.so.6)\n"
    text = "".join(
        f"{100 + i} [000]  {1.0 + i:.6f}:       sched:sched_switch: x\n"
        + chain
        + (other if i % 2 else "")
        + "\n"
        for i in range(6)
    )
    evs = list(parse_script(text.splitlines(keepends=True)))
    both = ("__schedule ([kernel.kallsyms])", "f (libc.so.6)")
    assert [e.stack for e in evs] == [
        both if i % 2 == 0 else (*both, "g (libm.so.6)") for i in range(6)
    ]


def test_target_controlled_names_cannot_fake_fields():
    # GIVEN a thread that named itself like the fields around it (15 characters at most)
    ev = PerfEvent(7, 0, 1.0, "sched:sched_switch",
                   "prev_comm=prev_state=R prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=a next_pid=8 next_prio=1")  # fmt: skip
    assert switch_state(ev) == "S"
    # a switch record naming another thread's pid is not believed
    other = PerfEvent(9, 0, 1.0, "sched:sched_switch", ev.fields)
    assert switch_state(other) is None
    wake = PerfEvent(
        7, 0, 1.0, "sched:sched_wakeup", "comm=pid=1 prio=1 pid=42 prio=120 target_cpu=001"
    )
    assert wakeup_target(wake) == 42


def test_frames_are_safe_for_the_folded_format():
    assert frame_label("a;b\nc", "/lib/libx.so") == "a:b c (libx.so)"
    assert frame_label("[unknown]", "[unknown]") is None
    assert frame_label("", "/usr/lib/libonnxruntime.so.1") == "[unknown] (libonnxruntime.so.1)"
    assert len(frame_label("x" * 5000, "/lib/liby.so") or "") <= 400


def test_futex_fields():
    enter = PerfEvent(1, 0, 1.0, "syscalls:sys_enter_futex",
                      "uaddr: 0x55d8c34c1060, op: 0x00000189, val: 0x00000000, utime: 0x00000000, uaddr2: 0x0, val3: 0xffffffff")  # fmt: skip
    assert futex_enter(enter) == (0x55D8C34C1060, 0x189, 0)
    assert (
        futex_cmd(0x189) == "WAIT_BITSET"
        and futex_cmd(0x81) == "WAKE"
        and futex_cmd(0x86) == "LOCK_PI"
    )
    assert futex_exit(PerfEvent(1, 0, 1.0, "syscalls:sys_exit_futex", "0xfffffffffffffff5")) == -11
    assert (
        futex_exit(
            PerfEvent(1, 0, 1.0, "syscalls:sys_exit_futex", "0x1     7fb09eca5ebf x (libc.so.6)")
        )
        == 1
    )


def _sw(tid, t, state, cpu=0, stack=("__schedule ([kernel.kallsyms])",)):
    fields = f"prev_comm=p prev_pid={tid} prev_prio=120 prev_state={state} ==> next_comm=q next_pid=0 next_prio=120"
    return [PerfEvent(tid, cpu, t, "sched:sched_switch", fields, stack),
            PerfEvent(tid, cpu, t + 1e-6, SWITCH_OUT, "preempt" if state == "R" else "")]  # fmt: skip


def test_preemption_is_run_queue_delay_and_a_cpu_change_is_a_migration():
    evs = [*_sw(10, 1.0, "R", cpu=0), PerfEvent(10, 1, 1.5, SWITCH_IN)]
    (row,) = convert(evs)
    assert isinstance(row, OffCpu)
    assert row.state == "R" and row.runq == row.dur and abs(row.dur - 0.5) < 1e-3
    assert (row.cpu, row.cpu_in) == (0, 1)


def test_wakeup_delay_is_measured_only_when_the_waker_is_seen():
    s = SchedSummary()
    evs = [
        *_sw(10, 1.0, "S"),
        PerfEvent(11, 1, 1.2, "sched:sched_wakeup", "comm=w pid=10 prio=120 target_cpu=000"),
        PerfEvent(10, 0, 1.25, SWITCH_IN),
        *_sw(10, 2.0, "S"),
        PerfEvent(10, 0, 2.5, SWITCH_IN),  # woken by something outside the recording
    ]
    seen, unseen = list(convert(evs, s))
    assert seen.waker == 11 and abs(seen.runq - 0.05) < 1e-9
    assert unseen.runq is None and unseen.waker is None and abs(unseen.dur - 0.5) < 1e-3
    assert (s.sleeps_resumed, s.wakeups_seen) == (2, 1)


def test_futex_waker_is_the_thread_that_woke_the_same_address():
    lock = "uaddr: 0x1000, op: 0x00000080, val: 0x00000002, utime: 0x0, uaddr2: 0x0, val3: 0x0"
    wake = "uaddr: 0x1000, op: 0x00000081, val: 0x00000001, utime: 0x0, uaddr2: 0x0, val3: 0x0"
    other = "uaddr: 0x2000, op: 0x00000081, val: 0x00000001, utime: 0x0, uaddr2: 0x0, val3: 0x0"
    evs = [
        PerfEvent(10, 0, 1.0, "syscalls:sys_enter_futex", lock),
        *_sw(
            10, 1.0001, "S", stack=("__schedule ([kernel.kallsyms])", "__lll_lock_wait (libc.so.6)")
        ),
        PerfEvent(12, 1, 1.2, "syscalls:sys_enter_futex", wake),
        PerfEvent(13, 1, 1.3, "syscalls:sys_enter_futex", other),
        PerfEvent(10, 0, 1.31, SWITCH_IN),
        PerfEvent(10, 0, 1.31, "syscalls:sys_exit_futex", "0x0"),
        PerfEvent(14, 0, 1.4, "syscalls:sys_enter_futex", lock),  # never returns
    ]
    rows = list(convert(evs))
    done = [r for r in rows if isinstance(r, FutexWait) and r.dur is not None]
    assert len(done) == 1
    f = done[0]
    assert f.uaddr == 0x1000 and f.waker == 12 and f.wake_t == 1.2 and f.blocked
    assert f.stack[-1] == "__lll_lock_wait (libc.so.6)" and f.ret == 0
    still = [r for r in rows if isinstance(r, FutexWait) and r.dur is None]
    assert [r.tid for r in still] == [14]


def test_nothing_is_paired_across_dropped_events():
    # GIVEN a switch-out, then the kernel dropping events, then a switch-in
    evs = [
        *_sw(10, 1.0, "S"),
        PerfEvent(0, 0, 1.5, LOST, lost=300),
        PerfEvent(10, 0, 2.0, SWITCH_IN),
    ]
    s = SchedSummary()
    # THEN no off-CPU period is made up across the gap
    assert list(convert(evs, s)) == []
    assert s.lost == 300


REAL = (FIXTURES / "perf" / "sched-lock.script.txt").read_text(encoding="utf-8").splitlines()[4:200]
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=120)
# real lines, real lines with something spliced in (a strange symbol name), or junk
LINE = st.one_of(
    st.sampled_from(REAL),
    st.builds(lambda a, i, b: a[:i] + b + a[i:], st.sampled_from(REAL), st.integers(0, 200), TEXT),
    TEXT,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=60))
def test_any_text_parses_without_error(lines):
    # perf's output carries symbol names from the target's binaries: nothing may crash us
    events = list(parse_script(lines))
    list(convert(events))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_c2c_parser_accepts_or_rejects_cleanly(text):
    try:
        parse_c2c(text)
    except C2cFormatError:
        pass
