"""The small helpers every analysis step shares."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from diagnose.analyse.model import most_common, ratio, rounded


@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.integers(0, 5))), st.integers(0, 8))
def test_most_common_orders_as_counter_does_ties_included(adds, n):
    # GIVEN the same additions to a Counter and to a dict of weights
    counter: Counter[str] = Counter()
    weights: dict[str, float] = {}
    for key, w in adds:
        counter[key] += w
        weights[key] = weights.get(key, 0) + w
    # THEN both list the same keys in the same order (ties: first added first)
    assert most_common(weights, n) == counter.most_common(n)
    assert most_common(weights) == counter.most_common()


def test_rounded_is_none_for_what_is_not_a_number():
    assert rounded(0.123456, 3) == 0.123
    assert rounded(None) is None
    assert rounded(float("nan")) is None
    assert rounded(float("inf")) is None
    assert ratio(1.0, 0.0) is None
    assert ratio(1.0, 4.0) == 0.25
