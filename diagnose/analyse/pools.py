"""Native thread pools (BLAS, OpenMP, MKL, onnxruntime, torch) as first-class threads.

A thread without Python frames belongs to the pool whose libraries most of its on-CPU
frames are in (rules/frames.toml ``[[pool]] library``). A sample of any thread whose
leaf-most user-space frame is one of the wait loops (``spin``) of that pool or of the
runtime the frame is in (torch's pool threads wait in libgomp), or that yields anywhere
(``[pools] spin``), is *spinning*: CPU time spent waiting for work or for the other threads
of a parallel region, not computing. Application threads spin too, inside the parallel
region they started (OpenBLAS's ``exec_blas`` waiting for its helpers). What the spin costs
the work (``spin_share_contended``) is the application threads' own, and the pool threads'
as far as other threads waited for a core.

Native frames come from perf: without it, which thread belongs to which pool and how much of
their time is spin is not measured (the metrics stay None, with perf's reason).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from diagnose.analyse.frames import Pool, is_native_frame
from diagnose.analyse.model import Context, rounded


def pools(ctx: Context) -> None:
    """Step: the native pools' threads, their CPU and spin shares, the fix that sizes them;
    spinning samples are put in the "spin" category (a wait loop is not compute, whatever
    library it is in), which :func:`~diagnose.analyse.oncpu.oncpu_shares` then sums."""
    m, frames = ctx.metrics, ctx.frames
    if m.get("oncpu_source") not in ("perf", "perf+py-spy") or not frames.pools:
        return
    total = sum(s.weight for s in ctx.oncpu)
    if total <= 0:
        return
    py_tids = ctx.data.python_tids
    native_frames: dict[int, list[str]] = defaultdict(list)
    for s in ctx.oncpu:
        if s.tid not in py_tids:
            native_frames[s.tid].extend(f for f in s.stack if is_native_frame(f))
    member: dict[int, Pool] = {}
    for tid, fr in native_frames.items():
        pool = frames.pool_of(fr)
        if pool is not None:
            member[tid] = pool
    cpu: dict[str, float] = defaultdict(float)  # pool threads' on-CPU weight
    spin: dict[str, float] = defaultdict(float)  # spinning in the pool's loops, any thread
    threads: dict[str, set[int]] = defaultdict(set)
    spun: set[int] = set()
    app_spin = 0.0  # spin in the application threads' own parallel regions
    for s in ctx.oncpu:
        pool = member.get(s.tid)
        if pool is None:  # an application thread: the pool it called into, if any
            pool = frames.pool_of([f for f in s.stack if is_native_frame(f)])
        else:
            cpu[pool.name] += s.weight
            threads[pool.name].add(s.tid)
        if frames.spins(s.stack, pool):
            spin[pool.name if pool is not None else ""] += s.weight
            spun.add(id(s))
            if s.tid not in member:
                app_spin += s.weight
    ctx.oncpu = [replace(s, category="spin") if id(s) in spun else s for s in ctx.oncpu]
    m["pool_threads"] = len(member)
    m["pool_cpu_share"] = rounded(sum(cpu.values()) / total, 4)
    # a pool thread spinning on a core no other thread wanted takes nothing from the work
    runq = m.get("runq_to_oncpu_ratio")
    wanted = min(1.0, float(runq)) if runq is not None else 1.0
    pool_spin = sum(spin.values()) - app_spin
    m["spin_share_contended"] = rounded((app_spin + pool_spin * wanted) / total, 4)
    named = {p.name: p for p in frames.pools}
    ranked = sorted(
        {*cpu, *(k for k in spin if k)}, key=lambda n: -(cpu.get(n, 0.0) + spin.get(n, 0.0))
    )
    m["pool_name"] = named[ranked[0]].name if ranked else ""
    m["pool_size_fix"] = ""  # sized for the whole service: analyse/service.py
    ctx.out.oncpu["pools"] = [
        {
            "name": n,
            "threads": sorted(threads.get(n, set()))[:64],
            "cpu_share": rounded(cpu.get(n, 0.0) / total, 4),
            "spin_share": rounded(spin.get(n, 0.0) / total, 4),
            "fix": "",
        }
        for n in ranked
    ]
