"""py-spy's rate on processes with many threads, and how --rate turns the lowering off."""

from __future__ import annotations

import pytest

from diagnose.cli.common import make_options
from diagnose.collect.pyspy import MIN_PYSPY_RATE, pyspy_rate


@pytest.mark.parametrize(
    ("rate", "threads", "budget", "want"),
    [
        (100, 9, 2000, 100),  # few threads: the rate asked for
        (100, 20, 2000, 100),
        (100, 21, 2000, 95),
        (100, 65, 2000, 30),  # the 65-thread service of docs/performance.md
        (100, 500, 2000, MIN_PYSPY_RATE),  # never below the floor
        (5, 500, 2000, 5),  # nor above the rate asked for
        (100, 65, 0, 100),  # budget 0: the user chose --rate
        (100, 0, 2000, 100),  # thread count unknown
    ],
)
def test_pyspy_rate(rate: int, threads: int, budget: int, want: int) -> None:
    assert pyspy_rate(rate, threads, budget) == want


def test_an_explicit_rate_is_kept_and_the_default_may_be_lowered() -> None:
    auto = make_options(10, None, 20, False, True, None, 1024)
    assert (auto.rate, auto.pyspy_thread_budget) == (100, 2000)
    chosen = make_options(10, 100, 20, False, True, None, 1024)
    assert (chosen.rate, chosen.pyspy_thread_budget) == (100, 0)
