"""Joins by time and thread (diagnose/analyse/joins.py), on hand-built intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from diagnose.analyse.joins import (
    TextCodes,
    map_distinct,
    python_stack_at,
    python_stack_seen,
    select_text,
)

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


def test_text_codes_compare_like_the_strings_and_missing_values_equal_nothing() -> None:
    s = pd.Series(["R", "S", None, "D", "S", "t", np.nan], dtype=object)
    codes = TextCodes(s)
    for values in (("S",), ("T", "t"), ("R", "D"), ("X",), ("X", "Y"), ("nan",)):
        want = s.isin(list(values)).to_numpy()
        assert (codes.eq(*values) == want).all(), values
    # pandas' string dtype, as the bundle's text columns are read
    st = pd.Series(["a", "b", None, "a"], dtype=pd.StringDtype("python", na_value=np.nan))
    assert TextCodes(st).eq("a").tolist() == [True, False, False, True]


def test_map_distinct_calls_once_per_value_and_passes_python_values() -> None:
    seen: list[object] = []

    def f(v: object) -> object:
        seen.append(v)
        return (type(v).__name__, v)

    out = map_distinct(np.array([3, 1, 3, 3, 1], dtype=np.int64), f)
    assert sorted(seen, key=str) == [1, 3] and all(type(v) is int for v in seen)
    assert out.tolist() == [("int", 3), ("int", 1), ("int", 3), ("int", 3), ("int", 1)]
    seen.clear()
    out = map_distinct(pd.Series(["x", None, "x"], dtype=object), f)
    assert len(seen) == 2 and out[0] == ("str", "x") and out[2] == ("str", "x")
