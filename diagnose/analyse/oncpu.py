"""On-CPU time and stages: which code the threads ran, by category of rules/frames.toml.

Each on-CPU sample is a thread's stack at a moment it ran: perf's native stack joined with
py-spy's Python stack of the same thread at the same moment; without perf, each py-spy
stack weighted by the CPU time its thread had while in it. A stack is in a *stage*
(preprocess, serialisation) if any frame matches one, else in the *kernel* type (compute,
memory, allocator) of its leaf-most native frame, else ``model`` or ``other``. The
categorised samples stay in ``ctx.oncpu`` for later steps (stage attribution by call
structure, say).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from diagnose.analyse.frames import FrameRules, is_native_frame, mixed_stack, user_leaf
from diagnose.analyse.joins import python_stack_seen
from diagnose.analyse.load import BundleData
from diagnose.analyse.model import (
    Context,
    OnCpuSample,
    ThreadTime,
    most_common,
    rounded,
    series_items,
)
from diagnose.analyse.threads import work_leaf
from diagnose.formats.stacks import Stack, ThreadFrame

#: on-CPU categories only native frames can reveal: without perf they are not measured
NATIVE_CATEGORIES = ("compute", "memory", "allocator", "spin")
#: the kernel categories of frames.toml, measured in every stage as ``kernel_share_*``
KERNEL_CATEGORIES = ("compute", "memory", "allocator")
#: the categories inside the model
INFERENCE_CATEGORIES = ("compute", "memory", "model")

Sample = tuple[int, Stack, float, float]  # (tid, stack, weight, of it the sure joins')
#: a native frame perf could not name, in a library it could (formats/perf_script.py)
_UNNAMED = re.compile(r"^\[unknown\] \(([^\[()][^()]*)\)$")


def oncpu_samples(ctx: Context) -> None:
    """Step: the on-CPU samples, each categorised by its frames' names (``ctx.oncpu``); the
    stage step places them by call structure next, and :func:`oncpu_shares` sums them."""
    data, m = ctx.data, ctx.metrics
    if data.native_samples is not None and not data.native_samples.empty:
        samples = perf_samples(data, ctx.frames)
        m["oncpu_source"] = "perf+py-spy" if data.py_intervals is not None else "perf"
    elif ctx.threads is not None and data.py_intervals is not None:
        samples = pyspy_samples(data)
        m["oncpu_source"] = "py-spy"
    else:
        return
    native = m["oncpu_source"] != "py-spy"
    total = sum(w for _, _, w, _ in samples)
    if native:
        m["oncpu_samples"] = len(samples)
    else:
        m["oncpu_samples"] = round(total * data.pyspy_rate)
    per_stack: dict[tuple[int, Stack], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for tid, st, w, sure in samples:  # each stack once
        acc = per_stack[(tid, st)]
        acc[0] += w
        acc[1] += sure
    ctx.oncpu = [
        OnCpuSample(tid, st, w, ctx.frames.categorize(st), sure=sure if native else None)
        for (tid, st), (w, sure) in per_stack.items()
    ]


def oncpu_shares(ctx: Context) -> None:
    """Step: on-CPU shares by category, the top functions, how serial preprocessing is."""
    m = ctx.metrics
    if m.get("oncpu_source") is None:
        return
    native = m["oncpu_source"] != "py-spy"
    total = sum(s.weight for s in ctx.oncpu)
    if total <= 0:
        for c in ctx.frames.names:
            m[f"oncpu_share_{c}"] = 0.0 if native or c not in NATIVE_CATEGORIES else None
        m["oncpu_share_inference"] = 0.0
        for c in KERNEL_CATEGORIES:
            m[f"kernel_share_{c}"] = 0.0 if native else None
        m["oncpu_native_share"] = 0.0
        m["oncpu_share_array_loops"] = 0.0 if native else None
        m["oncpu_share_other_array_loops"] = 0.0 if native else None
        m["compute_share_framework"] = 0.0 if native else None
        m["model_unnamed_library"] = "" if native else None
        return
    _shares(ctx, total, native)


def _shares(ctx: Context, total: float, native: bool) -> None:
    m, frames, names = ctx.metrics, ctx.frames, ctx.data.py_names
    by_cat: dict[str, float] = defaultdict(float)
    leaf_by_cat: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    thread_by_cat: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    stacks_by_cat: dict[str, dict[Stack, float]] = defaultdict(lambda: defaultdict(float))
    leaf_all: dict[str, float] = defaultdict(float)
    model_leaves: dict[str, float] = defaultdict(float)
    by_kernel: dict[str, float] = defaultdict(float)
    leaf_memory: dict[str, float] = defaultdict(float)
    native_w = framework_w = loops_w = loops_other_w = 0.0
    flame: dict[Stack, float] = defaultdict(float)
    for s in ctx.oncpu:
        by_cat[s.category] += s.weight
        # what the CPU does whatever stage it is in: a copy or a page fault in preprocessing
        # is memory traffic all the same
        kernel = frames.kernel_category(s.stack) or ""
        by_kernel[kernel] += s.weight
        if s.category == "compute" and frames.in_framework(s.stack):
            framework_w += s.weight
        # the code the time is spent in: the leaf-most frame outside the kernel (a kernel
        # frame under it, finish_task_switch say, is how it was entered, not the model's)
        leaf = (user_leaf(s.stack) or s.stack[-1]) if s.stack else "?"
        # and the one a fix names: not the futex call a GIL or lock hand-over burns CPU in
        named = (work_leaf(s.stack) or leaf) if s.stack else "?"
        leaf_by_cat[s.category][named] += s.weight
        leaf_all[named] += s.weight
        if s.category == "model":
            model_leaves[leaf] += s.weight
        if kernel in ("memory", "allocator"):
            leaf_memory[named] += s.weight
        # the array library's own loops that no stage or model call holds
        if s.category in ("other", "memory") and frames.in_array_loop(leaf):
            loops_w += s.weight
            loops_other_w += s.weight if s.category == "other" else 0.0
        thread_by_cat[s.category][s.tid] += s.weight
        stacks_by_cat[s.category][s.stack] += s.weight
        if any(is_native_frame(f) for f in s.stack):
            native_w += s.weight
        flame[(ThreadFrame(s.tid, names.get(s.tid, "")).format(), *s.stack)] += s.weight
    for c in frames.names:
        m[f"oncpu_share_{c}"] = rounded(by_cat.get(c, 0.0) / total, 4)
    for c in KERNEL_CATEGORIES:
        m[f"kernel_share_{c}"] = rounded(by_kernel.get(c, 0.0) / total, 4) if native else None
    compute = by_cat.get("compute", 0.0)
    m["compute_share_framework"] = rounded(framework_w / compute, 4) if compute > 0 else 0.0
    if not native:  # Python stacks cannot tell a GEMM from a memcpy: not measured
        for c in NATIVE_CATEGORIES:
            m[f"oncpu_share_{c}"] = None
        m["compute_share_framework"] = None
    inference = sum(by_cat.get(c, 0.0) for c in INFERENCE_CATEGORIES)
    m["oncpu_share_inference"] = rounded(inference / total, 4)
    m["oncpu_native_share"] = rounded(native_w / total, 4)
    m["oncpu_share_array_loops"] = rounded(loops_w / total, 4) if native else None
    m["oncpu_share_other_array_loops"] = rounded(loops_other_w / total, 4) if native else None
    _top_functions(m, leaf_all, leaf_by_cat, leaf_memory)
    m["model_unnamed_library"] = unnamed_library(model_leaves) if native else None
    _preprocess_threads(ctx, thread_by_cat)
    ctx.out.oncpu = {
        **ctx.out.oncpu,  # the stage step's "structure"
        "total_weight": total,
        "native": native,
        "shares": {c: rounded(by_cat.get(c, 0.0) / total, 4) for c in frames.names},
        "top_functions": {
            c: [(f, rounded(w / total, 4)) for f, w in most_common(leaf_by_cat[c], 5)]
            for c in leaf_by_cat
        },
        "top_stacks": {
            c: [(list(s), rounded(w / total, 4)) for s, w in most_common(stacks_by_cat[c], 3)]
            for c in stacks_by_cat
        },
        "descriptions": {c.name: c.description for c in frames.categories},
    }
    ctx.out.flames["cpu"] = list(flame.items())
    ctx.out.cpu_stages = {(s.tid, s.stack): s.category for s in ctx.oncpu}


def _top_functions(
    m: dict[str, Any],
    leaf_all: Mapping[str, float],
    leaf_by_cat: Mapping[str, Mapping[str, float]],
    leaf_memory: Mapping[str, float],
) -> None:
    """The function each fix names: the most sampled code of the process, of its
    preprocessing, of its model and compute kernels, and of its memory traffic."""
    m["oncpu_top_function"] = most_common(leaf_all, 1)[0][0] if leaf_all else ""
    pre = leaf_by_cat.get("preprocess", {})
    m["preprocess_top_function"] = most_common(pre, 1)[0][0] if pre else ""
    comp: dict[str, float] = defaultdict(float)
    for c in INFERENCE_CATEGORIES:
        for leaf, w in leaf_by_cat.get(c, {}).items():
            comp[leaf] += w
    m["compute_top_function"] = most_common(comp, 1)[0][0] if comp else ""
    m["memory_top_function"] = most_common(leaf_memory, 1)[0][0] if leaf_memory else ""


def unnamed_library(leaves: Mapping[str, float]) -> str:
    """The library of the most common of these leaf frames when perf left it unnamed
    ("[unknown] (lib.so)": the library has no symbols), else ""."""
    if not leaves:
        return ""
    top = most_common(leaves, 1)[0][0]
    m = _UNNAMED.match(top)
    return m.group(1) if m else ""


def _preprocess_threads(ctx: Context, thread_by_cat: Mapping[str, Mapping[int, float]]) -> None:
    """How serial preprocessing is: the threads that do it, the busiest one's share of it
    and of its own on-CPU time."""
    m = ctx.metrics
    by_thread = thread_by_cat.get("preprocess", {})
    ptotal = sum(by_thread.values())
    if ptotal > 0:
        m["preprocess_threads"] = sum(1 for v in by_thread.values() if v >= 0.1 * ptotal)
        top_tid, top_w = most_common(by_thread, 1)[0]
        own = sum(c.get(top_tid, 0.0) for c in thread_by_cat.values())
        m["preprocess_top_thread_share"] = rounded(top_w / ptotal, 3)
        m["preprocess_top_thread_stage_share"] = rounded(top_w / own, 3)
        m["preprocess_top_thread_busy"] = _busy_fraction(ctx.threads, top_tid)
    else:
        m["preprocess_threads"] = 0
        m["preprocess_top_thread_share"] = 0.0
        m["preprocess_top_thread_stage_share"] = 0.0
        m["preprocess_top_thread_busy"] = 0.0


def _busy_fraction(tt: ThreadTime | None, tid: int) -> float | None:
    if tt is None:
        return None
    row = tt.per_thread[tt.per_thread["tid"] == tid]
    if row.empty or float(row["total"].iloc[0]) <= 0:
        return None
    return rounded(float(row["busy"].iloc[0]) / float(row["total"].iloc[0]), 3)


def perf_samples(data: BundleData, frames: FrameRules | None = None) -> list[Sample]:
    """perf's on-CPU samples, each with the thread's Python stack then (mixed stacks).

    With ``frames``: a thread py-spy last saw blocked in a wait (``Queue.get``) that perf
    finds running named work (a unicodedata or GEMM kernel) has left that wait since (at
    18 Hz a request shorter than py-spy's period runs whole between two samples of the
    idle thread): its Python stack then is not known, and the sample keeps its native
    frames alone."""
    ns = data.native_samples
    if ns is None:
        return []
    period = 1.0 / data.pyspy_rate if data.py_intervals is not None else 0.0
    py_ids, seen = python_stack_seen(
        data.py_intervals, ns["t"].to_numpy(), ns["tid"].to_numpy(), period
    )
    weights = ns["weight"].to_numpy() if "weight" in ns else np.ones(len(ns))
    cache: dict[tuple[int, int], tuple[Stack, bool]] = {}
    out: list[Sample] = []
    for tid, sid, pid_, w, sure in zip(
        ns["tid"].to_numpy(), ns["stack_id"].to_numpy(), py_ids, weights, seen, strict=True
    ):
        key = (int(sid), int(pid_))
        hit = cache.get(key)
        if hit is None:
            py, native = data.py_stacks.get(int(pid_), ()), data.native_stacks.get(int(sid), ())
            hit = (mixed_stack(py, native), True)
            if frames is not None and _left_its_wait(frames, py, native):
                hit = (native, False)
            cache[key] = hit
        st, joined = hit
        out.append((int(tid), st, float(w), float(w) if sure and joined else 0.0))
    return out


def _left_its_wait(frames: FrameRules, py: Stack, native: Stack) -> bool:
    """A Python stack that ends in a wait, joined to native frames that run named work."""
    if not py or frames.wait_kind(py[-1]) is None or not native:
        return False
    return frames.categorize(native) != "other"


def pyspy_samples(data: BundleData) -> list[Sample]:
    """Python stacks weighted by the CPU time their thread had while in them (no perf).

    A thread's cumulative on-CPU time (schedstat; utime+stime where schedstat is missing)
    is known at every /proc tick. Interpolated linearly in between, its increase over a
    py-spy interval is the CPU time the thread spent in that interval's stack. So every
    py-spy sample counts (100 Hz), not only the stack seen at each /proc tick (20 Hz), and
    a sample of a thread that was blocked weighs nothing.
    """
    th, iv = data.threads, data.py_intervals
    if th is None or iv is None or iv.empty:
        return []
    if "oncpu_ns" in th and th["oncpu_ns"].notna().any():
        cum = pd.to_numeric(th["oncpu_ns"], errors="coerce") / 1e9
    else:
        cum = pd.to_numeric(th["utime"], errors="coerce") + pd.to_numeric(
            th["stime"], errors="coerce"
        )
    ticks = pd.DataFrame({"t": th["t"], "tid": th["tid"], "cum": cum}).dropna()
    by_tid = dict(tuple(ticks.sort_values(["tid", "t"]).groupby("tid", sort=False)))
    parts = []
    for tid, grp in iv.groupby("tid", sort=False):
        ref = by_tid.get(tid)
        if ref is None or len(ref) < 2:
            continue
        t = ref["t"].to_numpy()
        c = np.maximum.accumulate(ref["cum"].to_numpy())
        w = np.interp(grp["end"].to_numpy(), t, c) - np.interp(grp["start"].to_numpy(), t, c)
        parts.append(pd.DataFrame({"tid": tid, "stack_id": grp["stack_id"].to_numpy(), "w": w}))
    if not parts:
        return []
    df = pd.concat(parts)
    weights = df[df["w"] > 0].groupby(["tid", "stack_id"])["w"].sum()
    return [
        (int(tid), data.py_stacks.get(int(sid), ()), float(w), float(w))
        for (tid, sid), w in series_items(weights)
    ]
