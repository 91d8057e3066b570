"""diagnose's CPU budget (collect/budget.py): which rates a capture affords, what it lowers
first, what it never lowers, and how the command line turns it on and off."""

from __future__ import annotations

from dataclasses import replace

import pytest

from diagnose.cli.common import make_options
from diagnose.collect.budget import (
    MIN_GIL_RATE,
    MIN_PROC_RATE,
    MIN_PYSPY_RATE,
    MIN_PYSPY_RATE_MANY,
    Costs,
    Rates,
    default_budget,
    estimate,
    plan_rates,
    pyspy_floor,
    replan,
    sampler_allowance,
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
    assert p.rates == Rates(MIN_PYSPY_RATE_MANY, MIN_GIL_RATE, MIN_PROC_RATE)
    assert p.estimated_cores > 0.05  # the estimate is not bent to the budget


@pytest.mark.parametrize(
    ("threads", "hz"), [(1, 10), (32, 10), (33, 9), (40, 8), (64, 5), (69, 5), (5000, 5)]
)
def test_py_spys_floor_falls_with_the_thread_count_to_5_hz(threads, hz):
    # py-spy's cost at its floor stays that of 32 threads at 10 Hz, down to 5 Hz
    assert pyspy_floor(threads) == hz
    p = plan_rates(ASKED, threads, 0.0001, costs=COSTS)
    assert p.rates.pyspy == hz and p.rates.gil == MIN_GIL_RATE


def test_the_69_thread_service_of_the_overhead_benchmark_gets_5_hz_at_the_default_budget():
    p = plan_rates(ASKED, 69, 0.05)  # the reference host's unit costs
    assert p.rates == Rates(MIN_PYSPY_RATE_MANY, MIN_GIL_RATE, MIN_PROC_RATE)
    assert p.thinned[0] == "py-spy 100 -> 5 Hz"


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


def test_the_two_py_spy_samplers_share_what_the_budget_leaves_in_proportion():
    # 1 thread at the asked rates: /proc 0.011 leaves 0.039; py-spy planned at 0.01, the GIL
    # sampler at 0.005: two thirds and one third
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    assert sampler_allowance(p, "pyspy", COSTS) == pytest.approx(0.026)
    assert sampler_allowance(p, "gil", COSTS) == pytest.approx(0.013)
    assert replan(p, "pyspy", 0.026 * 1.24, 2.0, costs=COSTS) is None  # within OVERSPEND
    assert replan(p, "gil", 0.013 * 1.24, 2.0, costs=COSTS) is None
    # over OVERSPEND times its share but by less than REPLAN_MIN_SAVING: a restart would not
    # pay (an idle server's GIL sampler: 0.01 cores, a few clock ticks, against 0.001)
    assert replan(p, "gil", 0.013 + 0.019, 2.0, costs=COSTS) is None
    assert replan(p, "gil", 0.013 + 0.021, 2.0, costs=COSTS) is not None


def test_a_sampler_measured_over_its_share_is_lowered_in_proportion_and_says_why():
    # deep stacks: py-spy used 0.13 cores at 100 Hz where the plan expected 0.01
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    got = replan(p, "pyspy", 0.13, 2.3, costs=COSTS)
    assert got is not None
    rate, why = got
    assert rate == 20  # 100 x 0.026 / 0.13
    assert why == (
        "measured 2.3 s into the window: it used 0.130 cores at 100 Hz where the budget "
        "leaves it 0.026"
    )
    new = p.lowered("pyspy", rate, why)
    assert new.rates == Rates(20, ASKED.gil, ASKED.proc)
    assert new.thinned == [f"py-spy 100 -> 20 Hz ({why})"]
    assert new.to_dict()["rates_hz"] == {"pyspy": 20, "gil": 100, "proc": 20}
    # the GIL sampler's check lowers its own rate on the plan py-spy's already lowered
    gil_rate, gil_why = replan(p, "gil", 0.065, 2.4, costs=COSTS) or (0, "")
    assert gil_rate == 20  # 100 x 0.013 / 0.065
    both = new.lowered("gil", gil_rate, gil_why)
    assert both.rates == Rates(20, 20, ASKED.proc)
    assert [t.split(" (")[0] for t in both.thinned] == [
        "py-spy 100 -> 20 Hz",
        "GIL sampler 100 -> 20 Hz",
    ]


def test_a_sampler_is_never_lowered_below_its_floor_nor_without_a_budget():
    p = plan_rates(ASKED, 1, 0.05, costs=COSTS)
    floor = replan(p, "pyspy", 5.0, 2.0, costs=COSTS)
    assert floor is not None and floor[0] == MIN_PYSPY_RATE
    at_floor = p.lowered("pyspy", MIN_PYSPY_RATE, floor[1])
    assert replan(at_floor, "pyspy", 5.0, 4.0, costs=COSTS) is None
    # on many threads, the lower floor: measured over its share, py-spy goes to 5 Hz
    many = replace(plan_rates(Rates(20, 100, 20), 69, 1.0, costs=COSTS), budget_cores=0.05)
    assert many.rates.pyspy == 20
    assert (replan(many, "pyspy", 5.0, 2.0, costs=COSTS) or (0, ""))[0] == MIN_PYSPY_RATE_MANY
    unbounded = plan_rates(ASKED, 1, 0.0, costs=COSTS)
    assert replan(unbounded, "pyspy", 0.5, 2.0, costs=COSTS) is None
    # the /proc sampler alone over the budget: the py-spy samplers are left nothing
    crowded = plan_rates(ASKED, 500, 0.05, costs=COSTS)
    assert sampler_allowance(crowded, "pyspy", COSTS) == 0.0


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
