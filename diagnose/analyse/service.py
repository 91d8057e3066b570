"""A service's processes share the cores: count their threads together.

A pre-fork server's workers (and a multiprocessing service's processes) run on the same
cores. Judged one by one, two workers each with 16 intra-op threads on 2 cores look
reasonable (no worker alone has more never-blocking threads than cores) while together they
queue for the cores most of the time; and a pool size computed for one worker (cores //
its application threads) is the library's own default when two workers share the cores,
a change that changes nothing.

So every analysis carries the service's figures: the threads that compete for the cores
summed over its processes (``service_*``), the pool size that fits the cores for all the
application threads that call the pools, and the size in force now (the environment's
setting, else the library's default: one thread per CPU it sees). A process alone is a
service of one: its service figures are its own (:func:`lone_process`, a pipeline step);
:func:`share_cores` rewrites them once every worker of a capture has been analysed.

A multiprocessing service's processes need not be replicas: a pipeline's parent parses and
puts the work on a queue that a sibling process reads and runs the model on. Judged alone,
the parsing process has no model call and its CPU is unexplained. The structure decides, as
between threads (analyse/stages.py): a process that never calls the model but sends work to
other processes (``[structure] sends``) while a sibling calls the model is that model's
feeding stage (:func:`feeding_processes`); its Python work is preprocessing, and the stage's
CPU (``stage_cpu_share``) is that of the processes that run it, not the whole service's.
Which process reads a queue is not captured: a stage after the model in a process of its
own (one that sends its results on) would be read as feeding it too. Where no process calls
a model that can be seen (a NumPy projection at 0.01 cores), a process that sends work with
a saturated thread while the others wait is the stage that sets the pace
(:func:`saturated_senders`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diagnose.analyse.frames import FrameRules
from diagnose.analyse.model import Analysis, Context

#: the evidence a feeding process's threads carry (analyse/stages.py, feeders)
FEEDS = (
    "its process calls no model and sends work to other processes ({sends}); "
    "the service's model runs in PID {pids}"
)

#: the evidence of a sending process whose siblings wait for it (:func:`saturated_senders`)
FEEDS_WAITING = (
    "its process sends work to other processes ({sends}) with a thread {busy:.0%} busy; "
    "they used {theirs:.2f} cores together against its {own:.2f}: they wait for it"
)
#: a thread this busy sets its process's pace
SATURATED_THREAD = 0.8
#: the other processes' CPU, against the sender's, at most: they wait for its work
WAITING_SIBLINGS = 0.25

#: the service's metric -> the per-process metric it sums
SUMMED = {
    "service_cpu_bound_threads": "cpu_bound_threads",
    "service_app_threads_busy": "app_threads_busy",
    "service_native_threads_busy": "native_threads_busy",
}


def lone_process(ctx: Context) -> None:
    """Step: the service's figures of a process captured alone are its own."""
    m = ctx.metrics
    for service, own in SUMMED.items():
        if m.get(own) is not None:
            m[service] = m[own]
    m["stage_cpu_share"] = m.get("service_cpu_share")
    _pool_sizes(m, ctx.out.oncpu, ctx.frames)


def feeding_processes(analyses: Mapping[int, Analysis]) -> dict[int, str]:
    """Of one service's processes (pid -> analysis), those that feed a sibling's model: no
    thread of theirs calls the model, they send work to other processes, and another
    process of the service calls the model. Where no process calls a model that can be
    seen, a process that sends work to the others while one of its threads is saturated
    and they wait (:func:`saturated_senders`). pid -> the evidence."""
    model = sorted(pid for pid, a in analyses.items() if a.metrics.get("model_call_threads"))
    if not model:
        return saturated_senders(analyses)
    pids = ", ".join(str(p) for p in model[:3])
    out: dict[int, str] = {}
    for pid, a in analyses.items():
        sent = (a.oncpu.get("structure") or {}).get("sends")
        if pid not in model and sent:
            out[pid] = FEEDS.format(sends=sent, pids=pids)
    return out


def saturated_senders(analyses: Mapping[int, Analysis]) -> dict[int, str]:
    """The processes that send work to the service's others (``[structure] sends``) with a
    thread at least SATURATED_THREAD busy, while the others together used at most
    WAITING_SIBLINGS of its CPU: they wait for what it sends, and it is the pipeline's
    stage that sets the pace, whatever runs downstream. pid -> the evidence."""
    cores = {pid: a.metrics.get("process_cpu_cores") for pid, a in analyses.items()}
    if len(analyses) < 2 or not all(isinstance(c, (int, float)) for c in cores.values()):
        return {}
    out: dict[int, str] = {}
    for pid, a in analyses.items():
        sent = (a.oncpu.get("structure") or {}).get("sends")
        own = float(cores[pid] or 0.0)
        theirs = sum(float(c or 0.0) for p, c in cores.items() if p != pid)
        busy = busiest_thread(a)
        if sent and own > 0 and busy >= SATURATED_THREAD and theirs <= WAITING_SIBLINGS * own:
            out[pid] = FEEDS_WAITING.format(sends=sent, busy=busy, theirs=theirs, own=own)
    return out


def busiest_thread(a: Analysis) -> float:
    """The largest share of its time a thread of the process was busy (0 unmeasured)."""
    per = a.per_thread
    if per is None or per.empty or "busy" not in per or "total" not in per:
        return 0.0
    total = per["total"].where(per["total"] > 0)
    return float((per["busy"] / total).max(skipna=True) or 0.0)


def share_cores(
    analyses: Sequence[Analysis], frames: FrameRules, feeding: Sequence[Analysis] = ()
) -> None:
    """The analyses of one service's processes (sharing the cores), rewritten in place
    with the service's figures: the sums over all of them, the pool size that fits the
    cores for every application thread of the service; ``feeding``: those of them that are
    the feeding stage of the others' model, whose stage's CPU is theirs together."""
    if len(analyses) < 2:
        return
    stage = [a.metrics.get("process_cpu_share") for a in feeding]
    for a in feeding:
        if all(isinstance(v, (int, float)) for v in stage):
            a.metrics["stage_cpu_share"] = round(sum(float(v or 0.0) for v in stage), 3)
    sums: dict[str, float | None] = {}
    for service, own in SUMMED.items():
        values = [a.metrics.get(own) for a in analyses]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        sums[service] = sum(numbers) if numbers else None
    for a in analyses:
        m = a.metrics
        for service, total in sums.items():
            if total is not None:
                m[service] = total
                a.unmeasured.pop(service, None)
        _pool_sizes(m, a.oncpu, frames)


def _pool_sizes(m: dict[str, Any], oncpu: dict[str, Any], frames: FrameRules) -> None:
    """The intra-op size that fits the cores for the service's application threads, the
    size in force, and each pool's fix (one that changes something, or the next lever)."""
    cores, app = m.get("cores_available"), m.get("service_app_threads_busy")
    if cores and app:
        m["intra_op_suggestion"] = max(1, int(cores // app))
    env, cpus = m.get("pool_threads_env"), m.get("logical_cpus")
    in_force = env or cpus
    m["pool_size_in_force"] = in_force
    size = int(m.get("intra_op_suggestion") or 1)
    named = {p.name: p for p in frames.pools}
    for pool in oncpu.get("pools") or []:
        if pool.get("name") in named:
            pool["fix"] = _fix(named[pool["name"]].fix_for(size), size, in_force, m)
    top = named.get(str(m.get("pool_name") or ""))
    if top is not None:
        m["pool_size_fix"] = _fix(top.fix_for(size), size, in_force, m)


def _fix(fix: str, size: int, in_force: object, m: dict[str, Any]) -> str:
    """``fix`` unless ``size`` is what the pool runs with now: then the next lever."""
    if not isinstance(in_force, int) or size < in_force:
        return fix
    source = "its environment's setting" if m.get("pool_threads_env") else "the library's default"
    procs = int(m.get("service_processes") or 1)  # its workers (target selection)
    threads = int(m.get("service_app_threads_busy") or 0)
    where = f"{threads} application threads" + (f" in {procs} processes" if procs > 1 else "")
    return (
        f"the pool already runs {in_force} threads ({source}), the size that fits: what "
        f"remains is the number of threads that call it, {where} on "
        f"{m.get('cores_available'):g} cores: fewer workers or request threads, or batch "
        "the requests into fewer, larger model calls"
    )
