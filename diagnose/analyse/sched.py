"""Scheduling: how long threads waited for a core, how often they were switched out and
moved, and where they blocked.

Two sources. The /proc sampler's counters (schedstat, context switches, migrations) give
exact totals per thread; perf's scheduler view (``perf_sched``) gives every event:
run-queue delay per preemption and per wakeup by a thread of the target (wakeups from
other processes are not in a per-process recording and are left out, never estimated),
switches, migrations, and off-CPU time by stack.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from diagnose.analyse.frames import mixed_stack, python_leaf, user_leaf
from diagnose.analyse.joins import map_distinct, python_stack_at
from diagnose.analyse.load import BundleData
from diagnose.analyse.model import Context, most_common, ratio, rounded
from diagnose.formats.stacks import Stack, ThreadFrame

#: a thread whose last event is this close to the trace's end may still be running
BIRTH_END_MARGIN_S = 0.02
#: Bins of the run-queue delay histograms, in ms.
HIST_EDGES_MS = [0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]

FloatArray = npt.NDArray[np.float64]


# --- from /proc ----------------------------------------------------------------------------


def proc_scheduling(ctx: Context) -> None:
    """Step: runnable threads per tick, context switches, migrations, and the run-queue
    delay per timeslice (schedstat), from the /proc sampler."""
    tt, df = ctx.threads, ctx.data.threads
    if tt is None or df is None:
        return
    m, per, window = ctx.metrics, tt.per_thread, tt.window
    r_counts = df[df["state"] == "R"].groupby("t").size().reindex(df["t"].unique(), fill_value=0)
    m["runnable_threads_mean"] = rounded(float(r_counts.mean()), 2) if len(r_counts) else 0.0
    m["runnable_threads_p95"] = (
        rounded(float(np.percentile(r_counts.to_numpy(), 95)), 1) if len(r_counts) else 0.0
    )
    # context switches and migrations (cumulative counters read every 5th tick)
    if window > 0:
        vol = float(per["vcsw"].fillna(0).sum())
        inv = float(per["ivcsw"].fillna(0).sum())
        if per["vcsw"].notna().any():
            m["ctx_switches_voluntary_per_s"] = rounded(vol / window, 1)
            m["ctx_switches_involuntary_per_s"] = rounded(inv / window, 1)
            m["involuntary_switch_share"] = (
                rounded(ratio(inv, vol + inv), 3) if vol + inv > 0 else 0.0
            )
        if per["migrations"].notna().any():
            mig = float(per["migrations"].fillna(0).sum())
            m["migrations_per_s"] = rounded(mig / window, 2)
            if m["threads_busy"]:
                m["migrations_per_busy_thread_s"] = rounded(mig / window / m["threads_busy"], 2)
    # run-queue delay per timeslice, per interval, weighted by timeslices
    sl = tt.intervals[(tt.intervals["slices"] > 0)]
    if not sl.empty:
        per_slice_ms = (sl["runnable"] / sl["slices"] * 1000).to_numpy()
        w = sl["slices"].to_numpy()
        m["runq_delay_p50_ms"] = rounded(weighted_quantile(per_slice_ms, w, 0.5), 3)
        m["runq_delay_p99_ms"] = rounded(weighted_quantile(per_slice_ms, w, 0.99), 3)
        counts, _ = np.histogram(np.clip(per_slice_ms, 0, 999.9), bins=HIST_EDGES_MS, weights=w)
        ctx.out.series["runq_delay_hist"] = {
            "edges_ms": HIST_EDGES_MS,
            "counts": [round(c, 3) for c in counts.tolist()],
            "source": "schedstat",
        }


def switch_series(ctx: Context) -> None:
    """Step: context switches and migrations of the whole process per second (a chart)."""
    if ctx.threads is not None and ctx.data.threads is not None:
        ctx.out.series["switches"] = _switch_series(ctx.data.threads)


def weighted_quantile(values: FloatArray, weights: FloatArray, q: float) -> float:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cw = np.cumsum(w)
    if cw[-1] <= 0:
        return float("nan")
    idx = int(np.searchsorted(cw, q * cw[-1]))
    return float(v[min(idx, len(v) - 1)])


def _switch_series(df: pd.DataFrame) -> dict[str, Any]:
    """Context switches and migrations per second of the whole process, per 1 s bin."""
    out: dict[str, Any] = {}
    cols = [c for c in ("vcsw", "ivcsw", "migrations") if c in df]
    if not cols:
        return out
    d = df[["t", "tid", *cols]].copy()
    for c in cols:
        d[c] = pd.to_numeric(d[c], errors="coerce")
    d = d.dropna(subset=cols, how="all").sort_values(["tid", "t"])
    if d.empty:
        return out
    g = d.groupby("tid")
    for c in cols:
        d[f"d_{c}"] = g[c].diff().clip(lower=0)
    d["bin"] = np.floor(d["t"])
    agg = d.groupby("bin")[[f"d_{c}" for c in cols]].sum()
    out["t"] = agg.index.tolist()
    for c in cols:
        out[c] = agg[f"d_{c}"].round(1).tolist()
    return out


# --- from perf -----------------------------------------------------------------------------


def perf_scheduling(ctx: Context) -> None:
    """Step: perf's per-event run-queue delay, switches, migrations and off-CPU stacks."""
    data, off = ctx.data, ctx.data.sched_offcpu
    if off is None:
        return
    m = ctx.metrics
    window = _window(off)
    rq = off["runq"].dropna().to_numpy() * 1000 if "runq" in off else np.array([])
    m["sched_runq_events"] = len(rq)
    if len(rq):
        m["sched_runq_delay_p50_ms"] = rounded(float(np.percentile(rq, 50)), 3)
        m["sched_runq_delay_p99_ms"] = rounded(float(np.percentile(rq, 99)), 3)
        m["sched_runq_delay_max_ms"] = rounded(float(rq.max()), 3)
    preempted = pd.Series(
        map_distinct(off["state"], lambda st: str(st).startswith("R")).astype(bool),
        index=off.index,
    )
    if window > 0:
        m["sched_switches_voluntary_per_s"] = rounded(float((~preempted).sum()) / window, 1)
        m["sched_switches_involuntary_per_s"] = rounded(float(preempted.sum()) / window, 1)
        moved = 0.0
        if "cpu_in" in off:  # switched back in on another CPU (both known)
            cpu, cpu_in = off["cpu"], off["cpu_in"]
            moved = float((cpu.notna() & cpu_in.notna() & (cpu != cpu_in)).sum())
        m["sched_migrations_per_s"] = rounded(moved / window, 2)
    by_tid = (
        pd.DataFrame({"voluntary": (~preempted).astype(int), "involuntary": preempted.astype(int)})
        .groupby(off["tid"])
        .sum()
    )
    hist = np.histogram(np.clip(rq, 0, 999.9), bins=HIST_EDGES_MS)[0] if len(rq) else None
    ctx.out.series["runq_delay_hist_perf"] = {
        "edges_ms": HIST_EDGES_MS,
        "counts": [] if hist is None else [int(c) for c in hist],
        "source": "perf",
    }
    thread_births(ctx, off, window)
    # off-CPU time by stack: blocked (not preempted) periods with a known end
    blocked = off.loc[~preempted & off["dur"].notna(), ["t", "tid", "stack_id", "state", "dur"]]
    tops, top_site, top_share, flame = _offcpu_stacks(data, blocked)
    m["offcpu_top_site"] = top_site
    m["offcpu_top_share"] = top_share
    if flame:
        ctx.out.flames["offcpu"] = flame
    top = by_tid.sort_values("involuntary", ascending=False).head(50)
    ctx.out.extra.setdefault("perf", {})["sched"] = {
        "window_s": rounded(window, 3),
        "switches_per_thread": [
            {
                "tid": int(t),
                "name": data.py_names.get(int(t), ""),
                "voluntary": int(v),
                "involuntary": int(i),
            }
            for t, v, i in zip(
                top.index.tolist(),
                top["voluntary"].tolist(),
                top["involuntary"].tolist(),
                strict=True,
            )
        ],
        "runq_delay_events": len(rq),
        "offcpu_top_stacks": tops,
    }


def thread_births(ctx: Context, off: pd.DataFrame, window: float) -> None:
    """Threads started during perf's trace (every thread of the target that switched out
    in it, less those /proc saw at the capture's start), how long those that ended lived,
    and the thread-time they took against the process's busy thread-time: their lives, and
    the other threads' waits they ended (a join, a result, the GIL handed over). Threads
    started per request, whatever starts them (threading.Thread, a pool built per call)."""
    m, first_tick = ctx.metrics, ctx.data.threads
    if window <= 0 or first_tick is None or first_tick.empty or off.empty:
        return
    t0 = first_tick["t"].min()
    before = set(first_tick.loc[first_tick["t"] <= t0, "tid"].astype(int))
    ends = off["t"] + off["dur"].fillna(0)
    span = pd.DataFrame({"first": off["t"], "last": ends}).groupby(off["tid"].astype(int))
    life = span.agg({"first": "min", "last": "max"})
    born = life[~life.index.isin(before)]
    end = float(ends.max())
    m["threads_started_per_s"] = rounded(len(born) / window, 1)
    ended = born[born["last"] < end - BIRTH_END_MARGIN_S]
    if len(ended):
        m["threads_started_life_ms_p50"] = rounded(
            float((ended["last"] - ended["first"]).median()) * 1000, 3
        )
    busy = m.get("busy_threads_mean")
    if busy:
        alive = float((born["last"].clip(upper=end) - born["first"]).sum())
        woken = pd.Series(False, index=off.index)
        if "waker" in off:
            waker = pd.to_numeric(off["waker"], errors="coerce")
            woken = waker.isin(born.index) & ~off["tid"].isin(born.index)
            woken &= ~off["state"].astype(str).str.startswith("R")  # not preempted
        waited = float(off.loc[woken, "dur"].fillna(0).sum())
        m["busy_share_started_threads"] = rounded(min(1.0, (alive + waited) / window / busy), 4)


def thread_lifecycle(ctx: Context) -> None:
    """What starting and ending threads and processes costs: the share of perf's on-CPU
    samples of the process in clone, fork, exit and wait (``[structure] lifecycle``). The
    started threads' own work is not this cost: a thread per connection that runs a whole
    request costs its start and its exit, not the request."""
    ns = ctx.data.native_samples
    if ns is None or ns.empty:
        return
    weights = ns["weight"] if "weight" in ns else pd.Series(1.0, index=ns.index)
    by_stack = weights.groupby(ns["stack_id"].astype(int)).sum()
    total = float(by_stack.sum())
    if total <= 0:
        return
    stacks = ctx.data.native_stacks
    hit = 0.0
    for sid, w in zip(by_stack.index.tolist(), by_stack.tolist(), strict=True):
        if ctx.frames.starts_or_ends(stacks.get(int(sid), ())):
            hit += float(w)
    ctx.metrics["thread_lifecycle_cpu_share"] = rounded(hit / total, 4)


def _window(df: pd.DataFrame) -> float:
    if df.empty:
        return 0.0
    end = (df["t"] + df["dur"].fillna(0)).max()
    return float(end - df["t"].min())


def _offcpu_stacks(
    data: BundleData, blocked: pd.DataFrame
) -> tuple[list[dict[str, Any]], str, float | None, list[tuple[Stack, float]]]:
    if blocked.empty:
        return [], "", 0.0, []
    py_ids = python_stack_at(
        data.py_intervals, (blocked["t"] + 1e-4).to_numpy(), blocked["tid"].to_numpy()
    )
    # one row per (thread, native stack, Python stack, state): a 60 s capture of 64 threads
    # has ~300,000 off-CPU events but a few thousand such groups
    groups = (
        pd.DataFrame(
            {
                "tid": blocked["tid"].to_numpy(),
                "sid": blocked["stack_id"].to_numpy(),
                "pid": py_ids,
                "state": map_distinct(blocked["state"], str),
                "dur": blocked["dur"].to_numpy(),
            }
        )
        .groupby(["tid", "sid", "pid", "state"], sort=False)["dur"]
        .agg(["sum", "count"])
    )
    by_site: dict[str, float] = defaultdict(float)
    by_stack: dict[Stack, float] = defaultdict(float)
    count: Counter[Stack] = Counter()
    flame: dict[Stack, float] = defaultdict(float)
    mixed_of: dict[tuple[int, int], tuple[Stack, str]] = {}
    for (tid, sid, pid_, st), dur, n in zip(
        groups.index.tolist(), groups["sum"].tolist(), groups["count"].tolist(), strict=True
    ):
        key = (int(sid), int(pid_))
        if key not in mixed_of:
            native = data.sched_stacks.get(int(sid), ()) if sid >= 0 else ()
            py = data.py_stacks.get(int(pid_), ()) if pid_ >= 0 else ()
            site = " > ".join(x for x in (python_leaf(py), user_leaf(native)) if x) or "?"
            mixed_of[key] = (mixed_stack(py, native), site)
        mixed, site = mixed_of[key]
        by_stack[mixed] += float(dur)
        count[mixed] += int(n)
        by_site[site] += float(dur)
        root = ThreadFrame(int(tid), data.py_names.get(int(tid), "")).format()
        flame[(root, f"off-CPU ({st})", *mixed)] += float(dur)
    total = sum(by_site.values())
    site, secs = most_common(by_site, 1)[0]
    tops = [
        {
            "stack": list(s),
            "seconds": rounded(w, 4),
            "share": rounded(w / total, 4),
            "count": count[s],
        }
        for s, w in most_common(by_stack, 10)
    ]
    return tops, site, rounded(secs / total, 4) if total > 0 else 0.0, list(flame.items())
