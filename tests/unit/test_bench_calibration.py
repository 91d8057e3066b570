"""benchmarks/calibration.py on hand-built verdicts: the figures docs/accuracy.md quotes."""

from __future__ import annotations

import pytest

from benchmarks.calibration import Verdict, brier, ece, isotonic, reliability


def _v(conf: float, right: bool) -> Verdict:
    return Verdict("b1", "s01", conf, right)


def test_a_confidence_matching_the_share_right_has_no_calibration_error():
    # 0.9 right 9 times in 10, 0.3 right 3 times in 10
    vs = [_v(0.9, i < 9) for i in range(10)] + [_v(0.3, i < 3) for i in range(10)]
    assert ece(vs) == pytest.approx(0.0)
    assert [(n, r) for _lo, _hi, n, r, _m in reliability(vs)] == [(10, 3), (10, 9)]
    # under-confident: right every time at 0.3, the bin's gap is 0.7 over half the verdicts
    under = [_v(0.9, i < 9) for i in range(10)] + [_v(0.3, True) for _ in range(10)]
    assert ece(under) == pytest.approx(0.35)
    assert brier([_v(1.0, True), _v(0.0, False)]) == 0.0


def test_the_isotonic_fit_is_monotone_and_pools_what_violates_it():
    vs = [_v(0.1, True), _v(0.2, False), _v(0.5, True), _v(0.9, True)]
    fit = isotonic(vs)
    probs = [p for _lo, _hi, p, _n in fit]
    assert probs == sorted(probs)
    # the first two disagree with the order of their confidences: pooled at 0.5
    assert fit[0] == (0.1, 0.2, 0.5, 2)
    assert sum(n for *_x, n in fit) == len(vs)
