"""diagnose's CPU budget (collect/budget.py): which rates a capture affords, what it lowers
first, what it never lowers, and how the command line turns it on and off."""

from __future__ import annotations

import pytest

from diagnose.cli.common import make_options
from diagnose.collect.budget import (
    MIN_GIL_RATE,
    MIN_PROC_RATE,
    MIN_PYSPY_RATE,
    Costs,
    Rates,
    default_budget,
    estimate,
    plan_rates,
    pyspy_allowance,
    replan_pyspy,
)
from diagnose.errors import UsageError

ASKED = Rates(pyspy=100, gil=100, proc=20)
#: round figures, so the expected rates can be worked out by hand
COSTS = Costs(
    pyspy_per_thread_sample=100e-6,
    gil_per_thread_sample=50e-6,
    proc_per_tick=500e-6,
    proc_per_thread_tick=50e-6,
    fixed_cores=0.0,
)


@pytest.mark.parametrize(
    ("cores", "budget"), [(2, 0.05), (1, 0.05), (0.5, 0.05), (16, 0.4), (None, 0.05)]
)
def test_the_default_budget_is_a_share_of_the_cores_with_a_floor(cores, budget):
    assert default_budget(cores) == budget


def test_a_target_that_fits_keeps_every_rate_asked_for():
    # 1 thread: 0.01 + 0.005 + 20 x 0.00055 = 0.026 cores
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    assert p.rates == ASKED and p.thinned == []
    assert p.estimated_cores == pytest.approx(0.026)


def test_the_gil_sampler_is_lowered_first_and_no_further_than_needed():
    # 4 threads: py-spy 0.04, GIL 0.02, /proc 0.014 = 0.074 > 0.07; the GIL at 80 Hz fits
    p = plan_rates(ASKED, 4, 0.07, costs=COSTS)
    assert p.rates.pyspy == 100 and p.rates.proc == 20
    assert p.rates.gil == 80
    assert p.estimated_cores <= 0.07
    assert p.thinned == ["GIL sampler 100 -> 80 Hz"]


def test_then_pyspy_and_proc_are_lowered_together_within_the_budget():
    p = plan_rates(ASKED, 4, 0.05, costs=COSTS)
    assert p.estimated_cores <= 0.05
    assert p.rates.pyspy < 100 and p.rates.proc < 20
    # in proportion to what was asked for (within a tick of rounding down)
    assert abs(p.rates.pyspy / 100 - p.rates.proc / 20) <= 0.06
    assert p.rates.gil == max(MIN_GIL_RATE, p.rates.pyspy // 4)
    # as high as the budget allows: one more py-spy sample a second would not fit
    assert estimate(Rates(p.rates.pyspy + 2, p.rates.gil, p.rates.proc + 1), 4, COSTS) > 0.05


def test_a_process_with_many_threads_stops_at_the_floors_and_says_what_it_will_cost():
    p = plan_rates(ASKED, 500, 0.05, costs=COSTS)
    assert p.rates == Rates(MIN_PYSPY_RATE, MIN_GIL_RATE, MIN_PROC_RATE)
    assert p.estimated_cores > 0.05  # the estimate is not bent to the budget


def test_rates_the_user_chose_are_kept_and_the_others_pay_for_them():
    p = plan_rates(ASKED, 4, 0.05, keep_pyspy=True, costs=COSTS)
    assert p.rates.pyspy == 100
    # the GIL at a quarter of py-spy's (0.005), /proc with what is left: 0.005 / 0.0007
    assert (p.rates.gil, p.rates.proc) == (25, 7)
    kept = plan_rates(ASKED, 4, 0.05, keep_proc=True, costs=COSTS)
    assert kept.rates.proc == 20


def test_a_budget_of_zero_keeps_every_rate():
    p = plan_rates(ASKED, 500, 0.0, costs=COSTS)
    assert p.rates == ASKED and p.thinned == []


def test_rates_below_the_floors_stay_as_asked():
    low = Rates(pyspy=5, gil=5, proc=2)
    assert plan_rates(low, 500, 0.05, costs=COSTS).rates == low


def test_the_plan_is_recorded_with_what_it_lowered():
    d = plan_rates(ASKED, 4, 0.05, costs=COSTS).to_dict()
    assert d["budget_cores"] == 0.05 and d["threads"] == 4
    assert set(d["rates_hz"]) == {"pyspy", "gil", "proc"}
    assert [t.split(" ")[0] for t in d["thinned"]] == ["py-spy", "GIL", "/proc"]


def test_pyspy_measured_within_what_the_budget_leaves_it_keeps_its_rate():
    # 1 thread at the asked rates: the GIL sampler 0.005 and /proc 0.011 leave py-spy 0.034
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    assert pyspy_allowance(p, COSTS) == pytest.approx(0.034)
    assert replan_pyspy(p, 0.034 * 1.24, 2.0, costs=COSTS) is None  # within OVERSPEND


def test_pyspy_measured_over_the_budget_is_lowered_in_proportion_and_says_why():
    # deep stacks: py-spy used 0.17 cores at 100 Hz where the plan expected 0.01
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    new = replan_pyspy(p, 0.17, 2.3, costs=COSTS)
    assert new is not None
    assert new.rates == Rates(20, ASKED.gil, ASKED.proc)  # 100 x 0.034 / 0.17
    assert new.thinned == [
        "py-spy 100 -> 20 Hz (measured 2.3 s into the window: it used 0.170 cores at "
        "100 Hz where the budget leaves it 0.034)"
    ]
    assert new.to_dict()["rates_hz"] == {"pyspy": 20, "gil": 100, "proc": 20}
    # never below the floor, and a rate already at the floor stays
    floor = replan_pyspy(p, 5.0, 2.0, costs=COSTS)
    assert floor is not None and floor.rates.pyspy == MIN_PYSPY_RATE
    assert replan_pyspy(floor, 5.0, 4.0, costs=COSTS) is None


def test_a_chosen_rate_or_no_budget_is_not_lowered_whatever_pyspy_costs():
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    assert replan_pyspy(p, 0.5, 2.0, keep=True, costs=COSTS) is None
    unbounded = plan_rates(ASKED, 1, 0.0, costs=COSTS)
    assert replan_pyspy(unbounded, 0.5, 2.0, costs=COSTS) is None
    # the other samplers alone over the budget: py-spy is left nothing, so its floor
    crowded = plan_rates(ASKED, 500, 0.05, costs=COSTS)
    assert pyspy_allowance(crowded, COSTS) == 0.0


def test_the_command_line_keeps_a_rate_given_and_checks_the_budget():
    auto = make_options(10, None, None, False, True, None, 1024)
    assert (auto.rate, auto.rate_chosen, auto.proc_rate, auto.proc_rate_chosen) == (
        100,
        False,
        20,
        False,
    )
    assert auto.cpu_budget is None
    chosen = make_options(10, 100, 20, False, True, None, 1024, cpu_budget=0)
    assert (chosen.rate_chosen, chosen.proc_rate_chosen, chosen.cpu_budget) == (True, True, 0)
    with pytest.raises(UsageError, match="--cpu-budget must be 0"):
        make_options(10, None, None, False, True, None, 1024, cpu_budget=-1)
