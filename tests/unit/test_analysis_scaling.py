"""The helpers that keep the analysis linear in rows agree with the naive loops they replaced.

``map_distinct`` calls a function once per distinct value; ``pairs`` lists every
(window, item) pair with the item inside the window, which the lock-holder search uses to
find what a holder ran while it held a lock. Both are checked against brute force on
random inputs, edge cases included (empty windows, items on a window's bounds, NaN).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from diagnose.analyse.joins import map_distinct, pairs


def test_map_distinct_calls_once_per_distinct_value_and_keeps_row_order() -> None:
    calls: list[object] = []

    def f(v: object) -> str:
        calls.append(v)
        return f"<{v}>"

    values = pd.Series(["b", "a", "b", None, "a", "c", None], dtype=object)
    out = map_distinct(values, f)
    # a missing value (None or NaN) is passed once, as NaN
    assert out.tolist() == ["<b>", "<a>", "<b>", "<nan>", "<a>", "<c>", "<nan>"]
    assert len(calls) == 4  # b, a, NaN, c: each once


def test_map_distinct_on_numbers_and_nan() -> None:
    out = map_distinct(np.array([3, -1, 3, 7]), lambda i: i * 2 if i >= 0 else "")
    assert out.tolist() == [6, "", 6, 14]
    nan = map_distinct(pd.Series([1.0, float("nan"), 1.0]), lambda x: math.isnan(x))
    assert nan.tolist() == [False, True, False]
    assert map_distinct(pd.Series([], dtype=object), str).tolist() == []


def _brute(start, end, items, side, item_end=None):
    """Every (window, item) with the item in the window, as the replaced loops found them."""
    out = set()
    for w, (a, b) in enumerate(zip(start, end, strict=True)):
        for k, t in enumerate(items):
            if item_end is None:  # points: a <= t <= b ('right') or a <= t < b ('left')
                if a <= t and (t <= b if side == "right" else t < b):
                    out.add((w, k))
            elif min(item_end[k], b) - max(t, a) > 0:  # intervals overlapping [a, b)
                out.add((w, k))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_pairs_of_points_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = np.sort(rng.choice(np.arange(0, 10, 0.5), size=rng.integers(0, 15)))
    start = rng.choice(np.arange(0, 10, 0.5), size=12)
    end = start + rng.choice([0, 0.5, 1.0, 2.5], size=12)
    mask = rng.random(12) < 0.7
    w, k = pairs(mask, start, end, items, items, "right")
    got = set(zip(w.tolist(), k.tolist(), strict=True))
    want = {(a, b) for a, b in _brute(start, end, items, "right") if mask[a]}
    assert got == want
    assert len(got) == len(w)  # no pair twice


@pytest.mark.parametrize("seed", range(20))
def test_pairs_of_intervals_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(0, 12))
    # a thread's py-spy intervals: back to back, never overlapping, so ends are sorted too
    bounds = np.sort(rng.choice(np.arange(0, 20, 0.25), size=2 * n, replace=False))
    s, e = bounds[0::2], bounds[1::2]
    start = rng.choice(np.arange(0, 20, 0.25), size=10)
    end = start + rng.choice([0, 0.25, 1.0, 4.0], size=10)
    mask = np.ones(10, dtype=bool)
    w, k = pairs(mask, start, end, e, s)
    got = set(zip(w.tolist(), k.tolist(), strict=True))
    # the loop it replaced: range(searchsorted(e, a), searchsorted(s, b)), kept when the
    # overlap is positive (the caller's filter); intervals ending exactly at a are out
    positive = {(a, b) for a, b in got if min(e[b], end[a]) - max(s[b], start[a]) > 0}
    assert positive == _brute(start, end, s, "left", item_end=e)
