"""Threads the /proc sampler never saw, measured from perf's scheduler trace.

The /proc sampler reads every thread's counters a few times a second (5 Hz under the
default CPU budget); a thread that lives less than two ticks leaves no interval, so a
server that starts a thread per connection (Flask's threaded server, socketserver's
ThreadingMixIn) looked idle while its request threads queued on a lock. perf's scheduler
trace sees every switch of every thread: from it each such thread's life is split into
running (between switches), runnable (preempted, or the run-queue delay after a wakeup)
and blocked time, a blocked period classed by the futex wait that covers it (the GIL, a
lock, a condition: idle) and "other" where nothing says what it waited for (a socket read
may be a client or a dependency); as much of that as the process's requests outstanding at
its dependencies cover (the kernel's socket times) is a dependency's. The seconds are laid
on the /proc sampler's tick grid and join the thread-time table, so every busy-time share
counts them.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from diagnose.analyse.frames import python_leaf
from diagnose.analyse.joins import python_stack_at
from diagnose.analyse.model import BUSY_STATES, STATES, Context, ThreadTime, ratio, rounded
from diagnose.analyse.threads import thread_role

#: a futex wait's kind (threads.futex_waits) -> the thread state its time goes to
FUTEX_STATE = {"gil": "gil", "lock": "lock", "pool": "lock", "condition": "idle", "io": "io"}

Segment = tuple[float, float, str, str]  # start, end, state, futex address (of a lock wait)


def unseen_threads(ctx: Context) -> None:
    """Step: add the time of threads perf saw and /proc did not to the thread-time table."""
    tt, data = ctx.threads, ctx.data
    off = data.sched_offcpu
    if tt is None or off is None or off.empty or tt.intervals.empty:
        return
    seen = set(tt.intervals["tid"].astype(int).tolist())
    mine = off[~off["tid"].astype(int).isin(seen)]
    ticks = np.sort(data.threads["t"].unique()) if data.threads is not None else np.array([])
    ctx.metrics["threads_unseen"] = int(mine["tid"].nunique())
    if mine.empty or len(ticks) < 2:
        ctx.metrics["busy_share_unseen_threads"] = 0.0
        return
    futex = ctx.futex
    rows: list[dict[str, object]] = []
    for tid, grp in mine.groupby(mine["tid"].astype(int)):
        fx = futex[futex["tid"] == tid] if futex is not None and not futex.empty else None
        rows.extend(_binned(int(tid), _segments(grp, fx), ticks))
    if not rows:
        ctx.metrics["busy_share_unseen_threads"] = 0.0
        return
    add = pd.DataFrame(rows)
    _dependency_waits(add, tt.intervals, data.process, ticks)
    add["wait_t"] = add.pop("at")
    sid = python_stack_at(data.py_intervals, add["wait_t"].to_numpy(), add["tid"].to_numpy())
    add["stack_id"] = sid
    add["wait_stack"] = sid
    leaves = {int(s): python_leaf(data.py_stacks.get(int(s), ())) for s in set(sid.tolist())}
    add["py_leaf"] = [leaves.get(int(s), "") for s in sid]
    add["wait_leaf"] = add["py_leaf"]
    iv = pd.concat([tt.intervals, add.reindex(columns=tt.intervals.columns)], ignore_index=True)
    for col in tt.intervals.columns:
        if col in ("client", "loop"):
            iv[col] = iv[col].fillna(0.0)
    per = pd.concat([tt.per_thread, _per_thread(add, ctx)], ignore_index=True)
    busy_added = float(add[list(BUSY_STATES)].to_numpy().sum())
    busy_all = float(iv[list(BUSY_STATES)].to_numpy().sum())
    ctx.threads = ThreadTime(iv, per, tt.window, tt.gil_range, tt.native_mutex_s, tt.pool_wait_s)
    ctx.out.thread_time = ctx.threads
    ctx.out.per_thread = per
    ctx.metrics["busy_share_unseen_threads"] = (
        rounded(ratio(busy_added, busy_all), 4) if busy_all > 0 else 0.0
    )


def _dependency_waits(
    add: pd.DataFrame, seen: pd.DataFrame, process: pd.DataFrame | None, ticks: np.ndarray
) -> None:
    """The unseen threads' blocked time that nothing explained ("other") is a dependency's,
    as far as the process's requests outstanding at dependencies (the kernel's socket
    times, proc/process.csv ``out_awaiting``) cover it: N outstanding for a tick's length
    are N threads' waits, less the dependency waits of the threads /proc saw."""
    if process is None or "out_awaiting" not in process or add.empty:
        return
    out = pd.to_numeric(process["out_awaiting"], errors="coerce")
    read = out.notna().to_numpy()
    if not read.any():
        return
    t_read = process["t"].to_numpy(dtype=float)[read]
    n = out.to_numpy(dtype=float)[read]
    length = pd.Series(np.diff(ticks), index=ticks[1:])
    at = np.sort(add["t"].unique())
    # the last reading at or before each tick (read every 5th tick), the first before it
    held = n[np.clip(np.searchsorted(t_read, at, side="right") - 1, 0, len(n) - 1)]
    seen_io = seen.groupby("t")["io"].sum().reindex(at, fill_value=0.0).to_numpy()
    cap = np.clip(held * length.reindex(at, fill_value=0.0).to_numpy() - seen_io, 0.0, None)
    other = add.groupby("t")["other"].sum().reindex(at).to_numpy()
    share = np.divide(cap, other, out=np.zeros_like(cap), where=other > 0).clip(0.0, 1.0)
    moved = add["other"].to_numpy() * pd.Series(share, index=at).reindex(add["t"]).to_numpy()
    add["io"] = add["io"] + moved
    add["other"] = add["other"] - moved
    add.loc[add["wait_class"].eq("other") & (add["io"] > add["other"]), "wait_class"] = "io"


def _segments(off: pd.DataFrame, fx: pd.DataFrame | None) -> list[Segment]:
    """One thread's life, from its first switch-out to its last switch-in, in segments."""
    off = off.sort_values("t")
    t = off["t"].to_numpy(dtype=float)
    dur = off["dur"].fillna(0.0).to_numpy(dtype=float)
    runq = off["runq"].fillna(0.0).to_numpy(dtype=float) if "runq" in off else np.zeros(len(off))
    preempted = off["state"].astype(str).str.startswith("R").to_numpy()
    if fx is not None and not fx.empty:
        fx = fx.sort_values("t")
        fs = fx["t"].to_numpy(dtype=float)
        fe = fs + fx["dur"].to_numpy(dtype=float)
        fkind = fx["kind"].astype(str).to_numpy()
        faddr = fx["uaddr"].astype(str).to_numpy()
    else:
        fs = fe = np.array([])
        fkind = faddr = np.array([], dtype=object)
    out: list[Segment] = []
    prev_end = None
    for i in range(len(t)):
        start, end = t[i], t[i] + dur[i]
        if prev_end is not None and start > prev_end:
            out.append((prev_end, start, "running", ""))
        if preempted[i]:
            out.append((start, end, "runnable", ""))
        else:
            wake = max(start, end - min(runq[i], dur[i]))
            state, addr = "other", ""
            mid = (start + wake) / 2
            j = int(np.searchsorted(fs, mid, side="right")) - 1
            if j >= 0 and fe[j] >= mid:
                state = FUTEX_STATE.get(str(fkind[j]), "other")
                addr = str(faddr[j]) if state == "lock" else ""
            if wake > start:
                out.append((start, wake, state, addr))
            if end > wake:
                out.append((wake, end, "runnable", ""))
        prev_end = max(prev_end or end, end)
    return out


def _binned(tid: int, segments: list[Segment], ticks: np.ndarray) -> list[dict[str, object]]:
    """The segments' seconds per state in each /proc tick interval (t_prev, t]."""
    bins: dict[int, dict[str, float]] = defaultdict(lambda: dict.fromkeys(STATES, 0.0))
    addr_s: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    # when in the bin the thread was where its longest wait was: its Python stack then
    at: dict[int, tuple[float, float]] = {}
    for start, end, state, addr in segments:
        lo = max(1, int(np.searchsorted(ticks, start, side="left")))
        hi = min(len(ticks) - 1, int(np.searchsorted(ticks, end, side="left")))
        for b in range(lo, hi + 1):
            s = max(start, float(ticks[b - 1]))
            e = min(end, float(ticks[b]))
            if e <= s:
                continue
            bins[b][state] += e - s
            weight = (e - s) * (2.0 if state not in ("running", "runnable") else 1.0)
            if weight > at.get(b, (0.0, 0.0))[0]:
                at[b] = (weight, (s + e) / 2)
            if addr:
                addr_s[b][addr] += e - s
    rows: list[dict[str, object]] = []
    for b, secs in sorted(bins.items()):
        dt = sum(secs.values())
        if dt <= 0:
            continue
        addrs = addr_s.get(b)
        top_addr = max(addrs.items(), key=lambda kv: kv[1])[0] if addrs else ""
        blocked = {s: secs[s] for s in ("gil", "lock", "io", "idle", "other")}
        cls = max(blocked.items(), key=lambda kv: kv[1])[0] if any(blocked.values()) else ""
        rows.append(
            {
                "t": float(ticks[b]),
                "at": at[b][1],
                "tid": tid,
                "state": "S" if cls else "R",
                "cpu": np.nan,
                "wait_class": cls or "runnable",
                "dt": dt,
                "slices": 0.0,
                "futex_addr": top_addr,
                "client": 0.0,
                "loop": 0.0,
                **secs,
            }
        )
    return rows


def _per_thread(add: pd.DataFrame, ctx: Context) -> pd.DataFrame:
    data = ctx.data
    per = add.groupby("tid")[list(STATES)].sum()
    per["total"] = per[list(STATES)].sum(axis=1)
    per["busy"] = per[list(BUSY_STATES)].sum(axis=1)
    per["comm"] = ""
    per["name"] = [data.py_names.get(int(t), "") for t in per.index]
    per["python"] = [int(t) in data.python_tids for t in per.index]
    for col in ("vcsw", "ivcsw", "migrations"):
        per[col] = np.nan
    span = add.groupby("tid")["t"].agg(["min", "max"])
    per["seconds_seen"] = (span["max"] - span["min"]).reindex(per.index)
    per["role"] = [
        thread_role(n, c, p)
        for n, c, p in zip(per["name"], per["comm"], per["python"], strict=True)
    ]
    return per.reset_index()
