"""diagnose's CPU budget: the sampling rates a capture can afford on this target and host.

A capture runs beside the service it measures, often in a pod of 2-4 CPUs, where every
CPU-second a profiler uses is taken from the service. Its cost is the samplers' (py-spy
reading every thread's stack, the GIL sampler, the /proc sampler reading every thread's
files): each grows with the target's thread count times its rate. perf's cost is not
planned here: it samples in the kernel (about 0.3% of a busy thread at 100 Hz) and its
helper process used under 10 ms of CPU per 10 s window (collect/toolcpu.py measured it).

Before the collectors start, :func:`plan_rates` estimates the samplers' CPU at the
requested rates from costs measured on the reference host (:data:`COSTS`,
docs/performance.md) and, when it exceeds the budget, lowers the rates, in this order:
the GIL sampler first, down to a quarter of py-spy's rate (it measures one share per
thread: which thread holds the GIL, and where), then py-spy and the /proc sampler together,
in proportion, never below their floors. A rate the user chose (``--rate``,
``--proc-rate``) is kept. The capture measures what it really used (``tool_cpu_cores``,
by part) and the report shows both: the plan is an estimate, the measurement is not.

The default budget is 2.5% of the cores the target may use (cgroup quota included), at
least 0.05 of a core: 0.05 on 2 cores, 0.4 on 16.

The plan's unit costs are measured on shallow stacks; py-spy's cost grows with the depth of
the stacks it reads (a FastAPI event loop's, 40-60 frames: about 0.9 ms per sample of that
thread against 165 us; the GIL sampler's too, 0.77 ms), so the plan can be several times
low. Each py-spy's real CPU is therefore measured once, :data:`REPLAN_AFTER_S` after it
starts sampling, and when it uses more than :data:`OVERSPEND` times its share of what the
budget leaves the two py-spy samplers (:func:`sampler_allowance`), :func:`replan` lowers
its rate in proportion (never below its floor) and it is restarted at that rate for the
rest of the window (collect/pyspy.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

#: the default budget: this share of the cores available, and never less than MIN_BUDGET
BUDGET_SHARE = 0.025
MIN_BUDGET = 0.05

#: floors: below these a 10 s capture no longer gives the analysis enough samples
MIN_PYSPY_RATE = 10
MIN_GIL_RATE = 10
MIN_PROC_RATE = 5
#: py-spy reads every thread's stack at every sample, an idle thread's as dearly as a busy
#: one's (6 ms a sample of 69 threads on the AMD host: 0.06 cores at 10 Hz, more than the
#: whole budget). Above FEW_THREADS threads its floor falls in proportion to the thread
#: count, so that py-spy's cost at the floor stays that of FEW_THREADS threads at
#: MIN_PYSPY_RATE, down to MIN_PYSPY_RATE_MANY: 5 Hz is still 50 samples of each busy
#: thread in a 10 s window (docs/performance.md, "py-spy's floor on many threads")
FEW_THREADS = 32
MIN_PYSPY_RATE_MANY = 5

#: py-spy's cost is measured over its first seconds of sampling, then compared with what
#: the budget leaves it; more than OVERSPEND times that lowers its rate
REPLAN_AFTER_S = 2.0
OVERSPEND = 1.25
#: a restart costs a moment without Python samples (py-spy attaches again, 0.1-0.3 s): only
#: worth it with this much of the window left (and, by OVERSPEND, a rate cut by a fifth)
REPLAN_MIN_LEFT_S = 3.0
#: nor when it would save less than this: 4 of the kernel's 10 ms CPU ticks over the 2 s
#: measured, 1% of a 2-core host (an idle server's GIL sampler measured 0.01 cores against
#: a share of 0.001, and its restart cost more than it saved)
REPLAN_MIN_SAVING = 0.02


@dataclass(frozen=True)
class Costs:
    """CPU-seconds per unit of sampling work, measured on the reference host (2 vCPUs, AMD
    EPYC, Python 3.11 targets of 5 to 65 threads, py-spy 0.4.3; quiet host, 24 captures of
    10 s): ``python -m benchmarks tool-cost`` (docs/performance.md, "The CPU budget").

    py-spy's cost is per thread read, mostly in the kernel (reading the target's memory):
    130-210 us per thread-sample, the same for idle threads. The GIL sampler unwinds only
    the thread that holds the GIL: 19 us per thread of the target per sample."""

    pyspy_per_thread_sample: float = 165e-6
    gil_per_thread_sample: float = 20e-6
    proc_per_tick: float = 800e-6
    proc_per_thread_tick: float = 90e-6
    fixed_cores: float = 0.012  # diagnose's own threads: the window, progress, py-spy's runners


COSTS = Costs()


@dataclass(frozen=True)
class Rates:
    pyspy: int
    gil: int
    proc: int


@dataclass(frozen=True)
class Plan:
    """The rates a capture uses, and why (the manifest's ``capture.cpu_budget``)."""

    budget_cores: float  # 0: no budget (``--cpu-budget 0``)
    threads: int
    asked: Rates
    rates: Rates
    estimated_cores: float  # the samplers' CPU at ``rates``, from COSTS
    #: (sampler, why) for each rate lowered during the capture from its measured cost
    remeasured: tuple[tuple[str, str], ...] = ()

    @property
    def thinned(self) -> list[str]:
        """What was lowered to meet the budget, in words ("py-spy 100 -> 40 Hz")."""
        names = (("py-spy", "pyspy"), ("GIL sampler", "gil"), ("/proc sampler", "proc"))
        why = dict(self.remeasured)
        return [
            f"{label} {getattr(self.asked, key)} -> {getattr(self.rates, key)} Hz"
            + (f" ({why[key]})" if key in why else "")
            for label, key in names
            if getattr(self.rates, key) != getattr(self.asked, key)
        ]

    def lowered(self, key: str, rate: int, why: str) -> Plan:
        """This plan with sampler ``key``'s ("pyspy", "gil") rate lowered to ``rate``."""
        return replace(
            self,
            rates=replace(self.rates, **{key: rate}),
            remeasured=(*self.remeasured, (key, why)),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "budget_cores": self.budget_cores,
            "threads": self.threads,
            "estimated_cores": self.estimated_cores,
            "rates_hz": {"pyspy": self.rates.pyspy, "gil": self.rates.gil, "proc": self.rates.proc},
            "thinned": self.thinned,
        }


def pyspy_floor(threads: int) -> int:
    """py-spy's lowest rate on a target of ``threads`` threads (:data:`FEW_THREADS`)."""
    if threads <= FEW_THREADS:
        return MIN_PYSPY_RATE
    return max(MIN_PYSPY_RATE_MANY, MIN_PYSPY_RATE * FEW_THREADS // threads)


def floor(key: str, threads: int) -> int:
    """The lowest rate the budget lowers sampler ``key`` ("pyspy", "gil") to."""
    return pyspy_floor(threads) if key == "pyspy" else MIN_GIL_RATE


def default_budget(cores_available: float | None) -> float:
    """BUDGET_SHARE of the cores the target may use, at least MIN_BUDGET."""
    return round(max(MIN_BUDGET, BUDGET_SHARE * (cores_available or 1.0)), 3)


def estimate(rates: Rates, threads: int, costs: Costs = COSTS) -> float:
    """The samplers' CPU in cores at ``rates`` on a process of ``threads`` threads."""
    n = max(1, threads)
    return (
        costs.fixed_cores
        + rates.pyspy * n * costs.pyspy_per_thread_sample
        + rates.gil * n * costs.gil_per_thread_sample
        + rates.proc * (costs.proc_per_tick + n * costs.proc_per_thread_tick)
    )


def plan_rates(
    asked: Rates,
    threads: int,
    budget: float,
    keep_pyspy: bool = False,
    keep_proc: bool = False,
    costs: Costs = COSTS,
) -> Plan:
    """The rates that fit ``budget`` cores (module docstring). ``keep_*``: the user chose
    that rate; a budget of 0 keeps every rate."""

    def plan(rates: Rates) -> Plan:
        return Plan(budget, threads, asked, rates, round(estimate(rates, threads, costs), 4))

    if budget <= 0 or estimate(asked, threads, costs) <= budget:
        return plan(asked)
    # 1. the GIL sampler, down to a quarter of py-spy's rate
    gil_floor = min(asked.gil, max(MIN_GIL_RATE, asked.pyspy // 4))
    gil = _fit(
        asked.gil,
        gil_floor,
        lambda r: estimate(Rates(asked.pyspy, r, asked.proc), threads, costs) <= budget,
    )
    rates = Rates(asked.pyspy, gil, asked.proc)
    if estimate(rates, threads, costs) <= budget:
        return plan(rates)

    # 2. py-spy and /proc together, in proportion to what was asked, down to their floors
    py_floor = pyspy_floor(threads)

    def scaled(f: float) -> Rates:
        py = asked.pyspy if keep_pyspy else max(min(asked.pyspy, py_floor), int(asked.pyspy * f))
        proc = asked.proc if keep_proc else max(min(asked.proc, MIN_PROC_RATE), int(asked.proc * f))
        return Rates(py, min(gil, max(min(asked.gil, MIN_GIL_RATE), py // 4)), proc)

    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if estimate(scaled(mid), threads, costs) <= budget:
            lo = mid
        else:
            hi = mid
    return plan(scaled(lo))


def sampler_allowance(plan: Plan, key: str, costs: Costs = COSTS) -> float:
    """The cores the budget leaves py-spy sampler ``key`` ("pyspy", "gil"): what is left
    beside the /proc sampler and diagnose's own threads, shared between the two py-spy
    samplers in proportion to their planned costs (0 when nothing is left)."""
    n = max(1, plan.threads)
    both = plan.budget_cores - estimate(Rates(0, 0, plan.rates.proc), plan.threads, costs)
    planned = {
        "pyspy": plan.rates.pyspy * n * costs.pyspy_per_thread_sample,
        "gil": plan.rates.gil * n * costs.gil_per_thread_sample,
    }
    total = sum(planned.values())
    return max(0.0, both * planned[key] / total) if total > 0 else 0.0


def replan(
    plan: Plan, key: str, measured_cores: float, at_s: float, costs: Costs = COSTS
) -> tuple[int, str] | None:
    """(the lower rate, why) for sampler ``key`` of ``plan`` (the plan the capture started
    with), which really used ``measured_cores`` at the plan's rate (``at_s``: seconds into
    the window, for the note); None when that is within OVERSPEND of its allowance or over
    it by less than REPLAN_MIN_SAVING, when it is at its floor already or there is no
    budget."""
    rate = getattr(plan.rates, key)
    lowest = floor(key, plan.threads)
    if plan.budget_cores <= 0 or measured_cores <= 0 or rate <= lowest:
        return None
    allowed = sampler_allowance(plan, key, costs)
    if measured_cores <= allowed * OVERSPEND or measured_cores - allowed < REPLAN_MIN_SAVING:
        return None
    new = max(lowest, int(rate * allowed / measured_cores))
    why = (
        f"measured {at_s:.1f} s into the window: it used {measured_cores:.3f} cores at "
        f"{rate} Hz where the budget leaves it {allowed:.3f}"
    )
    return new, why


def _fit(high: int, low: int, fits: Callable[[int], bool]) -> int:
    """The highest rate in [low, high] for which ``fits(rate)``; ``low`` if none."""
    for r in range(high, low - 1, -1):
        if fits(r):
            return r
    return low
