"""Threads /proc never saw (shorter than two of its ticks), measured from perf's scheduler
trace, and waits for a resource peers hand back (a connection pool made of a queue)."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.analyse import locks, threads, unseen
from tests.unit.analysis import FUTEX, bundle_data, futex_table, run, ticks

#: Python stacks: a request thread queueing on a plain lock, on a queue used as a
#: connection pool, and a worker waiting for work on a queue
LOCKED = ("run (threading.py:1)", "handle (app.py:5)")
POOLED = ("run (threading.py:1)", "handle (app.py:9)", "Queue.get (queue.py:171)",
          "Condition.wait (threading.py:327)")  # fmt: skip
#: a thread pool's worker loop waiting for its next job (a C SimpleQueue: no frame below it)
WORKER = ("Thread._bootstrap (threading.py:1)",
          "_worker (/usr/lib/python3.11/concurrent/futures/thread.py:81)")  # fmt: skip
#: a request thread blocked reading a socket (a blocking client's call to a dependency)
CALLING = ("run (threading.py:1)", "handle (app.py:12)", "SocketIO.readinto (socket.py:706)")
STACKS = {0: ("main (app.py:1)",), 1: LOCKED, 2: POOLED, 3: WORKER, 4: CALLING}
N, LIFE, WAIT = 20, 0.05, 0.04  # 20 threads, each living 50 ms, 40 ms of it blocked


def _capture(
    stack_id: int,
    waker: int | None = None,
    ret: int = 0,
    socket_wait: bool = False,
    awaiting: float | None = None,
    words: int = N,
    sampled: int = N,
) -> dict:
    """/proc saw thread 1 run for 1 s (ticks every 0.2 s); perf saw 20 threads started
    0.05 s apart, each running 5 ms, blocked 40 ms in a futex wait, running 5 ms, ending;
    the waits on ``words`` addresses in turn; py-spy named every thread and sampled the
    first ``sampled``."""
    t, tid, state, dur, wk, rows = [], [], [], [], [], []
    iv = [(1, 0.0, 1.0, 0)]
    for i in range(N):
        start = 0.1 + 0.04 * i
        who = 100 + i
        t += [start + 0.005, start + LIFE]
        tid += [who, who]
        state += ["S", "X"]
        dur += [WAIT, float("nan")]
        wk += [waker if waker is not None else 100 + (i - 1 if i else 1), None]
        rows.append({"t": start + 0.005, "tid": who, "uaddr": hex(0x7000 + 64 * (i % words)),
                     "dur": WAIT, "waker": wk[-2], "ret": ret})  # fmt: skip
        if i < sampled:
            iv.append((who, start, start + LIFE, stack_id))
    offcpu = pd.DataFrame({"t": t, "tid": tid, "cpu": 0, "state": state, "dur": dur,
                           "cpu_in": 0, "runq": 0.0, "waker": wk, "stack_id": 0})  # fmt: skip
    grid = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    # the process's requests outstanding at its dependencies, read every 5th tick
    process = None if awaiting is None else pd.DataFrame(
        {"t": grid, "out_awaiting": [awaiting if i % 5 == 0 else None for i in range(6)]})  # fmt: skip
    data = bundle_data(
        ticks(1, grid, step=0.2), iv, STACKS,
        sched_offcpu=offcpu, sched_futex=None if socket_wait else futex_table(rows),
        sched_stacks={0: ("__poll (libc.so.6)",) if socket_wait
                      else ("__futex_abstimed_wait_common (libc.so.6)",)},
        process=process, names={t: f"thread-{t}" for t in [1, *range(100, 100 + N)]},
    )  # fmt: skip
    return run(data, threads.thread_states, unseen.unseen_threads, threads.thread_metrics,
               locks.proc_locks).metrics  # fmt: skip


def test_threads_proc_never_saw_join_the_busy_time():
    # GIVEN request threads that each wait 40 ms on one lock (different wait words: the
    # futex of a lock held in turn by short-lived threads) and live 50 ms
    m = _capture(stack_id=1)
    assert m["threads_unseen"] == N
    # each thread from its first switch-out (the run before it is not in the trace): 40 ms
    # blocked, 5 ms running; thread 1 ran all along
    lock, running = N * WAIT, 1.0 + N * 0.005
    assert m["busy_share_lock"] == pytest.approx(lock / (lock + running), abs=0.005)
    assert m["busy_share_unseen_threads"] == pytest.approx(
        N * (WAIT + 0.005) / (lock + running), abs=0.005
    )
    # the lock's waiters are the unseen threads, each on its own wait word, from one line
    assert m["lock_top_site"] == "handle (app.py:5)" and m["lock_top_waiters"] == N


def test_waits_for_work_handed_over_by_a_producer_stay_idle():
    # near miss: the same threads wait in a queue's get, each woken by thread 1, which
    # never waits there: waiting for work, not contention
    m = _capture(stack_id=2, waker=1)
    assert m["threads_unseen"] == N
    assert m["busy_share_lock"] == 0.0
    assert m["busy_share_running"] == 1.0


def test_a_queue_whose_items_peers_hand_back_is_a_lock():
    # GIVEN the same queue wait, each thread woken by the one before it, which had waited
    # there too: a connection taken and given back (a pool of one)
    m = _capture(stack_id=2)
    lock = N * WAIT
    assert m["busy_share_lock"] == pytest.approx(lock / (lock + 1.0 + N * 0.005), abs=0.005)
    # per-wait lock words name nothing: the waits group by the code that asked for them
    assert m["lock_top_site"] == "handle (app.py:9)"
    assert m["lock_top_waiters"] == N


@pytest.mark.parametrize("sampled", [N // 2, 0])
def test_a_queue_s_words_reused_by_threads_py_spy_missed_stay_one_lock(sampled):
    # GIVEN the queue's per-wait words reused by later waiters (4 in turn, never two
    # waiters at once) and py-spy's samples of only some of the threads, or none
    m = _capture(stack_id=2, words=4, sampled=sampled)
    # THEN the waits stay one queue, not four addresses' quarters of it
    lock = N * WAIT
    assert m["busy_share_lock"] == pytest.approx(lock / (lock + 1.0 + N * 0.005), abs=0.005)
    assert m["lock_top_share"] == pytest.approx(m["busy_share_lock"], abs=0.005)
    assert m["lock_top_waiters"] == N
    assert m["lock_top_site"] == ("handle (app.py:9)" if sampled else "")


def test_threads_queued_at_once_on_one_word_are_its_lock_not_a_queue_s_words():
    # GIVEN two threads blocked on one address in the same instant, their stacks unseen
    lk = pd.DataFrame({"t": [0.2, 0.2, 0.4], "tid": [1, 2, 3], "lock": [0.2, 0.2, 0.2],
                       "stack_id": [-1, -1, -1], "sync": [False] * 3})  # fmt: skip
    # THEN a lock (by the ticks, or by perf's waits where it measured them), and the same
    # addresses with waits one after another are words made per wait
    assert not locks._per_wait(lk, None) and not locks._per_wait(lk, 2)
    assert locks._per_wait(lk, 1)
    assert locks._per_wait(lk.assign(t=[0.2, 0.4, 0.6]), None)


def test_a_thread_pool_s_workers_waking_each_other_wait_for_work():
    # near miss (batch 8's s03): gunicorn gthread's pool workers, each woken by the one
    # before, at their loop's line taking the next job: the serving machinery waiting for
    # work, not a resource handed back (it read lock/mutex 0.42; labelled lock/gil)
    m = _capture(stack_id=3)
    assert m["busy_share_lock"] == 0.0


def test_a_timed_out_wait_is_no_hand_back():
    # near miss: the same queue waits ending by their timeout (a paced worker's Event.wait),
    # the timer's wakeup credited to a peer that happened to be on the CPU: nothing was
    # handed back, and the waits stay waits for work
    m = _capture(stack_id=2, ret=-110)  # -ETIMEDOUT
    assert m["busy_share_lock"] == 0.0


def _pool_of_two(waker_of: dict[int, int], traced_until: float = 0.5) -> dict:
    """/proc saw threads 1 and 2 for 2 s, each on a CPU 10% of it and otherwise blocked in a
    futex wait at a queue's get (POOLED); perf's trace stopped at ``traced_until`` (its event
    budget), having seen their waits there, each ended by ``waker_of[tid]``."""
    rows, fx = [], []
    for tid in (1, 2):
        rows += ticks(tid, [0.02 * i for i in range(11)], state="S", step=0.2,
                      syscall=FUTEX, arg0=hex(0x9000 + tid))  # fmt: skip
        fx += [{"t": 0.1 * i, "tid": tid, "uaddr": hex(0x9000 + tid), "dur": 0.09,
                "waker": waker_of[tid], "ret": 0} for i in range(round(traced_until / 0.1))]  # fmt: skip
    data = bundle_data(rows, [(1, 0.0, 2.0, 2), (2, 0.0, 2.0, 2)], STACKS,
                       sched_futex=futex_table(fx))  # fmt: skip
    return run(data, threads.thread_states, threads.thread_metrics).metrics


def test_waits_past_the_trace_at_a_stack_whose_traced_waits_were_hand_backs_are_lock():
    # GIVEN two threads handing one connection back and forth (batch 7's s03: a queue of
    # one connection, perf's trace stopped 3 s into the 10 s window at its event budget)
    m = _pool_of_two({1: 2, 2: 1})
    # THEN their waits after the trace are the same waits: lock, not idle, all window long
    # (was 0.69: only the traced quarter counted)
    assert m["busy_share_lock"] == pytest.approx(0.9, abs=0.01)
    # near miss: handed work by a producer (thread 9) that never waits there: idle all along
    m = _pool_of_two({1: 9, 2: 9})
    assert m["busy_share_lock"] == 0.0
    # near miss: too few traced waits to speak for the stack: only the traced part moves
    m = _pool_of_two({1: 2, 2: 1}, traced_until=0.2)
    assert m["busy_share_lock"] == pytest.approx(0.18 / (0.18 + 0.2), abs=0.01)


def test_unseen_waits_the_outstanding_requests_cover_are_the_dependency_s():
    # GIVEN 20 short threads each blocked 40 ms in poll() (no futex: nothing says on
    # what), while the kernel counted one request outstanding at a dependency all along
    m = _capture(stack_id=4, socket_wait=True, awaiting=1.0)
    full = m["busy_share_io"]
    # THEN their waits (0.8 thread-s, one at a time) are the dependency's: I/O, not idle
    io = N * WAIT
    assert m["busy_share_io"] == pytest.approx(io / (io + 1.0 + N * 0.005), abs=0.01)
    # near miss: nothing outstanding (the waits were on the threads' own clients)
    m = _capture(stack_id=4, socket_wait=True, awaiting=0.0)
    assert m["busy_share_io"] == 0.0
    # half a request outstanding covers part of the waits, never more than it lasted
    half = _capture(stack_id=4, socket_wait=True, awaiting=0.5)
    io_s = half["busy_share_io"] * half["busy_time_s"]
    assert 0.0 < io_s <= 0.5 * 1.0 + 0.01 and half["busy_share_io"] < full
