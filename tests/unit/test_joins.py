"""Joins by time and thread (diagnose/analyse/joins.py), on hand-built intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from diagnose.analyse.joins import python_stack_at, python_stack_seen, select_text

#: thread 1 in stack 7 from 0.00 to 0.10 s (py-spy at 100 Hz: samples at 0.00 ... 0.09),
#: then in stack 8 for one sample (0.10 to 0.11); thread 2 in stack 9
INTERVALS = pd.DataFrame(
    {
        "tid": [1, 1, 2],
        "start": [0.0, 0.10, 0.0],
        "end": [0.10, 0.11, 0.5],
        "stack_id": [7, 8, 9],
    }
)


def test_a_moment_takes_the_stack_its_thread_was_in_then() -> None:
    ids = python_stack_at(INTERVALS, [0.05, 0.105, 0.05, 0.2, 0.05], [1, 1, 2, 1, 3])
    # 0.2 is past thread 1's last interval by more than the tolerance; thread 3 has none
    assert ids.tolist() == [7, 8, 9, -1, -1]


def test_a_join_is_sure_where_py_spy_saw_the_same_stack_after_the_moment() -> None:
    t = [0.05, 0.095, 0.105, 0.12]
    ids, seen = python_stack_seen(INTERVALS, t, [1, 1, 1, 1], period=0.01)
    assert ids.tolist() == [7, 7, 8, 8]
    # 0.05: later samples of stack 7 up to 0.09; 0.095: the next sample (0.10) was another
    # stack; stack 8 was one sample, so nothing in it is sure, nor past its end
    assert seen.tolist() == [True, False, False, False]


def test_near_miss_no_intervals_join_nothing() -> None:
    ids, seen = python_stack_seen(None, [0.1], [1], period=0.01)
    assert ids.tolist() == [-1] and seen.tolist() == [False]


def test_select_text_picks_like_np_select_and_shares_one_string_per_choice():
    x = np.arange(10)
    conds = [x < 3, x < 6, x == 8]
    choices = ["low", "mid", "low"]
    got = select_text(conds, choices, "other", pd.RangeIndex(10))
    want = np.select(conds, choices, default="other")
    assert got.tolist() == want.tolist()
    # one object per distinct text, not one per row (a million rows, a few choices)
    assert len({id(v) for v in got}) == 3
