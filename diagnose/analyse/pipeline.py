"""The analysis: every step, in the order it runs.

Each step is ``step(ctx: Context) -> None`` (:mod:`diagnose.analyse.model`): it reads the
bundle's tables and what earlier steps left in ``ctx``, and adds metrics (each in the
catalogue, :mod:`diagnose.analyse.registry`) and report tables to ``ctx.out``. A step whose
data is missing writes nothing; after the last step every catalogue metric still unwritten
is ``None`` with the reason (the missing collector's, or "no data").

To add a step (a new collector's view, say): write ``def my_step(ctx: Context) -> None`` in
the module of its subject, add its metrics to the catalogue, and put it in ``STEPS`` after
the steps whose results it reads (``ctx.threads`` after ``thread_states``, ``ctx.oncpu``
after ``oncpu_samples`` (placed by ``stages``), ``ctx.hotspots`` after ``proc_locks``). Test it on a hand-built
``Context`` (tests/unit/analysis.py). The order of ``STEPS`` is also the order of the
metrics in report.json.
"""

from __future__ import annotations

from diagnose.analyse import (
    counters,
    false_sharing,
    flames,
    gil,
    host,
    lanes,
    locks,
    oncpu,
    pools,
    sched,
    service,
    stages,
    threads,
    unseen,
)
from diagnose.analyse.frames import FrameRules
from diagnose.analyse.load import BundleData
from diagnose.analyse.model import Analysis, Context, Step
from diagnose.analyse.registry import METRICS

STEPS: tuple[Step, ...] = (
    # the target process and its host
    host.system_metrics,
    host.process_metrics,
    lanes.dependency_lanes,
    host.tool_parts,
    host.cpu_metrics,
    host.host_processes,
    # thread states: settled once (native mutex waits included), read by every step below
    threads.thread_states,
    unseen.unseen_threads,
    threads.thread_metrics,
    lanes.dependency_queue,
    sched.proc_scheduling,
    gil.gil_waiters,
    sched.switch_series,
    threads.thread_timeline,
    # locks from /proc and py-spy (holders inferred)
    locks.proc_locks,
    # on-CPU time and stages: samples by name, placed by call structure, then summed
    oncpu.oncpu_samples,
    stages.stages,
    # native thread pools: their threads, CPU and spin (spin samples become "spin")
    pools.pools,
    oncpu.oncpu_shares,
    # who holds the GIL
    gil.gil_holders,
    # flame graphs of wall-clock time and waits
    flames.wall_and_waits,
    # perf: scheduler events, futex waits (measured lock holders), hardware
    sched.perf_scheduling,
    sched.thread_lifecycle,
    locks.perf_locks,
    locks.lock_owner,
    counters.false_sharing,
    false_sharing.shared_lines,
    counters.hardware_counters,
    # the service's figures (its processes share the cores): a process alone is its own
    service.lone_process,
)


def analyse_data(
    data: BundleData, frames: FrameRules, steps: tuple[Step, ...] = STEPS, feeds: str = ""
) -> Analysis:
    """Run ``steps`` over the bundle's tables; say why each metric left unwritten is.
    ``feeds``: why the process is the feeding stage of a sibling's model (or "")."""
    ctx = Context(
        data, frames, Analysis(metrics={}, unmeasured={}, per_thread=None, thread_time=None)
    )
    ctx.feeds = feeds
    try:
        for step in steps:
            step(ctx)
    finally:
        frames.forget()
    m, unmeasured = ctx.metrics, ctx.out.unmeasured
    for name, d in METRICS.items():
        if m.get(name) is None:
            m[name] = None
            reasons = [data.missing[s] for s in d.sources if s in data.missing]
            unmeasured[name] = reasons[0] if reasons else "no data for it in this capture"
    return ctx.out
