"""perf's views, turned into metrics and report tables (an analysis extension).

- Scheduler (``perf_sched``): run-queue delay per event (every preemption, and every wakeup
  whose waker was a thread of the target: the others are not in a per-process recording and
  are left out, never estimated), context switches and migrations, off-CPU time by stack.
- Futex waits (``perf_sched`` with the syscall tracepoints): wait time per lock address with
  the waiters' native and Python stacks (py-spy's stack of the same thread at the same
  moment) and the *measured* holder: the thread that woke the waiters by releasing that
  very address, and what it was running while they waited. This replaces the holder that
  the core analysis infers from py-spy (which stays as the fallback, marked inferred).
  For threads without Python frames, a futex wait whose native stack is a mutex path
  (``__lll_lock_wait``, ``pthread_mutex_lock``, PI futexes) is lock contention, not idle:
  their thread time is re-accounted where perf saw it.
- False sharing (``c2c``): contended cache lines, HITM counts, offsets, symbols, threads.
- Hardware counters (``perf_stat``): IPC, cache-miss ratio.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from collections import Counter
from typing import Any, Literal

import numpy as np
import pandas as pd

from diagnose.analyse.frames import FrameRules
from diagnose.analyse.load import BundleData, map_distinct

# _thread_metrics: re-run after re-accounting native threads' mutex waits, so every
# thread-time metric stays consistent; _r: the core analysis's rounding of metric values.
from diagnose.analyse.metrics import Analysis, _r, _thread_metrics, mixed_stack
from diagnose.analyse.threads import BUSY_STATES, STATES, join_python_stacks, python_leaf
from diagnose.errors import BadBundle
from diagnose.formats.perf_stat import parse_stat
from diagnose.formats.stacks import ThreadFrame

Stack = tuple[str, ...]

#: Native leaf frames (glibc, musl, libstdc++) of a thread blocked acquiring a mutex.
MUTEX_FRAMES = (
    "*lll_lock_wait*",
    "*pthread_mutex_lock*",
    "*pthread_mutex_timedlock*",
    "*pthread_mutex_clocklock*",
    "*mutex_lock_full*",
    "*pthread_rwlock_*lock*",
    "*std::mutex::lock*",
    "*__mutex_lock*",
)
#: ... blocked waiting for a condition (or a semaphore): waiting for work, idle.
CONDITION_FRAMES = (
    "*pthread_cond_*",
    "*futex_abstimed_wait*",
    "*do_futex_wait*",
    "*sem_wait*",
    "*sem_timedwait*",
    "*sem_clockwait*",
    "*pthread_barrier_wait*",
)
_MUTEX_RE = re.compile("|".join(fnmatch.translate(p) for p in MUTEX_FRAMES))
_COND_RE = re.compile("|".join(fnmatch.translate(p) for p in CONDITION_FRAMES))
KERNEL = "[kernel.kallsyms]"


def user_leaf(stack: Stack) -> str:
    """The leaf-most frame outside the kernel (stacks are root first)."""
    for f in reversed(stack):
        if not f.endswith(f"({KERNEL})"):
            return f
    return ""


def native_wait_kind(leaf: str, op: str = "") -> str:
    """'mutex' | 'condition' | '' for the native frame a thread blocked in."""
    if op.startswith("LOCK_PI"):
        return "mutex"
    name = leaf.rsplit(" (", 1)[0]
    if _MUTEX_RE.match(name):
        return "mutex"
    if _COND_RE.match(name):
        return "condition"
    return ""


def _table(
    data: BundleData, rel: str, cols: list[str], dtypes: dict[str, str]
) -> pd.DataFrame | None:
    b = data.bundle
    if not b.has(rel):
        return None
    try:  # every column read below is required, so an empty or foreign table is missing
        return b.table(rel, list(dict.fromkeys([*cols, *dtypes])), dtypes)
    except BadBundle as exc:
        data.missing.setdefault("perf_sched", str(exc))
        return None


def _stacks(data: BundleData, rel: str) -> dict[int, Stack]:
    df = _table(data, rel, ["stack_id", "frames"], {"stack_id": "int"})
    if df is None:
        return {}
    return {
        int(s): tuple(str(f).split(";")) if isinstance(f, str) else ()
        for s, f in zip(df["stack_id"], df["frames"], strict=True)
    }


def _py_ids(data: BundleData, t: np.ndarray, tid: np.ndarray) -> np.ndarray:
    if data.py_intervals is None or len(t) == 0:
        return np.full(len(t), -1, dtype=np.int64)
    ticks = pd.DataFrame({"t": t, "tid": tid})
    return join_python_stacks(ticks, data).to_numpy()


def _window(df: pd.DataFrame) -> float:
    if df.empty:
        return 0.0
    end = (df["t"] + df["dur"].fillna(0)).max()
    return float(end - df["t"].min())


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


# --- scheduler ------------------------------------------------------------------------------


def _sched(data: BundleData, a: Analysis, stacks: dict[int, Stack]) -> None:
    off = _table(
        data,
        "sched/offcpu.csv",
        ["t", "tid", "state", "stack_id"],
        {"t": "float", "tid": "int", "dur": "float", "runq": "float", "stack_id": "int"},
    )
    if off is None:
        return
    m = a.metrics
    window = _window(off)
    rq = off["runq"].dropna().to_numpy() * 1000 if "runq" in off else np.array([])
    m["sched_runq_events"] = len(rq)
    if len(rq):
        m["sched_runq_delay_p50_ms"] = _r(_pct(rq, 50), 3)
        m["sched_runq_delay_p99_ms"] = _r(_pct(rq, 99), 3)
        m["sched_runq_delay_max_ms"] = _r(float(rq.max()), 3)
    preempted = pd.Series(
        map_distinct(off["state"], lambda st: str(st).startswith("R")).astype(bool),
        index=off.index,
    )
    if window > 0:
        m["sched_switches_voluntary_per_s"] = _r(float((~preempted).sum()) / window, 1)
        m["sched_switches_involuntary_per_s"] = _r(float(preempted.sum()) / window, 1)
        back = off.dropna(subset=["cpu", "cpu_in"]) if "cpu_in" in off else off.iloc[0:0]
        m["sched_migrations_per_s"] = _r(float((back["cpu"] != back["cpu_in"]).sum()) / window, 2)
    by_tid = (
        pd.DataFrame({"voluntary": (~preempted).astype(int), "involuntary": preempted.astype(int)})
        .groupby(off["tid"])
        .sum()
    )
    hist_edges = [0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    counts, _ = np.histogram(np.clip(rq, 0, 999.9), bins=hist_edges) if len(rq) else ([], None)
    a.series["runq_delay_hist_perf"] = {
        "edges_ms": hist_edges,
        "counts": [int(c) for c in counts],
        "source": "perf",
    }
    # off-CPU time by stack: blocked (not preempted) periods with a known end
    blocked = off.loc[~preempted & off["dur"].notna(), ["t", "tid", "stack_id", "state", "dur"]]
    tops, top_site, top_share, flame = _offcpu_stacks(data, blocked, stacks)
    m["offcpu_top_site"] = top_site
    m["offcpu_top_share"] = top_share
    if flame:
        a.flames["offcpu"] = flame
    sched: dict[str, Any] = a.extra.setdefault("perf", {})
    sched["sched"] = {
        "window_s": _r(window, 3),
        "switches_per_thread": [
            {
                "tid": int(t),
                "name": data.py_names.get(int(t), ""),
                "voluntary": int(r.voluntary),
                "involuntary": int(r.involuntary),
            }
            for t, r in by_tid.sort_values("involuntary", ascending=False).head(50).iterrows()
        ],
        "runq_delay_events": len(rq),
        "offcpu_top_stacks": tops,
    }


def _offcpu_stacks(
    data: BundleData, blocked: pd.DataFrame, stacks: dict[int, Stack]
) -> tuple[list[dict[str, Any]], str, float | None, list[tuple[Stack, float]]]:
    if blocked.empty:
        return [], "", 0.0, []
    py_ids = _py_ids(data, (blocked["t"] + 1e-4).to_numpy(), blocked["tid"].to_numpy())
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
    by_site: Counter[str] = Counter()
    by_stack: Counter[Stack] = Counter()
    count: Counter[Stack] = Counter()
    flame: Counter[Stack] = Counter()
    mixed_of: dict[tuple[int, int], tuple[Stack, str]] = {}
    for (tid, sid, pid_, st), dur, n in zip(
        groups.index, groups["sum"].to_numpy(), groups["count"].to_numpy(), strict=True
    ):
        key = (int(sid), int(pid_))
        if key not in mixed_of:
            native = stacks.get(int(sid), ()) if sid >= 0 else ()
            py = data.py_stacks.get(int(pid_), ()) if pid_ >= 0 else ()
            site = " > ".join(x for x in (python_leaf(py), user_leaf(native)) if x) or "?"
            mixed_of[key] = (mixed_stack(py, native), site)
        mixed, site = mixed_of[key]
        by_stack[mixed] += float(dur)
        count[mixed] += int(n)
        by_site[site] += float(dur)
        flame[
            (
                ThreadFrame(int(tid), data.py_names.get(int(tid), "")).format(),
                f"off-CPU ({st})",
                *mixed,
            )
        ] += float(dur)
    total = sum(by_site.values())
    site, secs = by_site.most_common(1)[0]
    tops = [
        {"stack": list(s), "seconds": _r(w, 4), "share": _r(w / total, 4), "count": count[s]}
        for s, w in by_stack.most_common(10)
    ]
    return tops, site, _r(secs / total, 4) if total > 0 else 0.0, list(flame.items())


# --- futex waits ------------------------------------------------------------------------


def _gil(data: BundleData) -> tuple[int, int] | None:
    rt = (data.system.get("python") or {}).get("runtime") or {}
    try:
        return int(str(rt["start"]), 16), int(str(rt["end"]), 16)
    except (KeyError, TypeError, ValueError):
        return None


def _futex(
    data: BundleData, frames: FrameRules, a: Analysis, stacks: dict[int, Stack]
) -> pd.DataFrame | None:
    fx = _table(
        data,
        "sched/futex.csv",
        ["t", "tid", "uaddr", "op"],
        {"t": "float", "tid": "int", "dur": "float", "stack_id": "int", "blocked": "int"},
    )
    if fx is None:
        return None
    m = a.metrics
    fx = fx[fx["dur"].notna()].copy()
    if fx.empty:
        m["futex_wait_s"] = 0.0
        m["futex_lock_wait_s"] = 0.0
        return fx
    fx["uaddr"] = fx["uaddr"].astype(str)
    fx["waker"] = pd.to_numeric(fx.get("waker"), errors="coerce")
    fx["wake_t"] = pd.to_numeric(fx.get("wake_t"), errors="coerce")
    addr = map_distinct(fx["uaddr"], lambda s: int(s, 16) if s.startswith("0x") else -1)
    mid = (fx["t"] + fx["dur"] / 2).to_numpy()
    py_ids = _py_ids(data, mid, fx["tid"].to_numpy())
    # leaves and kinds are computed once per distinct stack and key, not once per wait
    fx["py_leaf"] = map_distinct(
        py_ids, lambda i: python_leaf(data.py_stacks.get(int(i), ())) if i >= 0 else ""
    )
    fx["native"] = map_distinct(
        fx["stack_id"], lambda s: user_leaf(stacks.get(int(s), ())) if s >= 0 else ""
    )
    py_tids = set(data.py_names) | (
        set(data.py_intervals["tid"].unique().tolist()) if data.py_intervals is not None else set()
    )
    gil = _gil(data)
    fx["_addr"] = addr
    fx["_op"] = fx["op"].astype(str)
    by_key = fx.groupby(["_addr", "py_leaf", "native", "_op", "tid"], sort=False)
    kinds = []  # one per distinct key, in the groups' order
    for a_, leaf, nat, op, tid in by_key.size().index:
        if gil is not None and gil[0] <= a_ < gil[1]:
            kinds.append("gil")
        elif int(tid) in py_tids:
            wk = frames.wait_kind(leaf) if leaf else None
            kinds.append("condition" if wk == "idle" else ("io" if wk == "io" else "lock"))
        else:
            nk = native_wait_kind(nat, op)
            kinds.append(
                "lock" if nk == "mutex" else ("condition" if nk == "condition" else "other")
            )
    fx["kind"] = np.array(kinds, dtype=object)[by_key.ngroup().to_numpy()]
    fx = fx.drop(columns=["_addr", "_op"])
    m["futex_wait_s"] = _r(float(fx["dur"].sum()), 3)
    lk = fx[fx["kind"] == "lock"]
    m["futex_lock_wait_s"] = _r(float(lk["dur"].sum()), 3)
    locks = _futex_locks(data, lk, fx)
    a.extra.setdefault("perf", {})["futex_locks"] = locks
    if locks:
        top = locks[0]
        m["futex_top_address"] = top["address"]
        m["futex_top_waiters"] = top["waiters"]
        m["futex_top_wait_s"] = top["wait_s"]
        m["futex_top_site"] = top["site"]
        m["futex_top_holder"] = top["holder"]["thread"] if top["holder"] else ""
        m["futex_top_holder_site"] = top["holder"]["site"] if top["holder"] else ""
    else:
        m["futex_top_address"] = ""
        m["futex_top_waiters"] = 0
        m["futex_top_wait_s"] = 0.0
        m["futex_top_site"] = ""
        m["futex_top_holder"] = ""
        m["futex_top_holder_site"] = ""
    return fx


def _futex_locks(data: BundleData, lk: pd.DataFrame, fx: pd.DataFrame) -> list[dict[str, Any]]:
    """Lock addresses two or more threads waited on, longest wait first, with holders."""
    out = []
    for addr, grp in lk.groupby("uaddr"):
        waiters = grp["tid"].nunique()
        if waiters < 2:
            continue
        sites = Counter(s for s in grp["py_leaf"].tolist() if s)
        natives = Counter(s for s in grp["native"].tolist() if s)
        site = (sites or natives).most_common(1)[0][0] if (sites or natives) else ""
        out.append(
            {
                "address": str(addr),
                "waiters": int(waiters),
                "waits": len(grp),
                "wait_s": _r(float(grp["dur"].sum()), 4),
                "blocked_waits": int(grp["blocked"].sum()) if "blocked" in grp else None,
                "site": site,
                "sites": sites.most_common(5),
                "native_sites": natives.most_common(5),
                "waiter_threads": [
                    {
                        "tid": int(t),
                        "name": data.py_names.get(int(t), ""),
                        "wait_s": _r(float(s), 4),
                    }
                    for t, s in grp.groupby("tid")["dur"]
                    .sum()
                    .sort_values(ascending=False)
                    .head(20)
                    .items()
                ],
                "holder": _holder(data, grp, fx, site),
            }
        )
    out.sort(key=lambda d: -float(d["wait_s"] or 0))
    return out[:20]


def _holder(
    data: BundleData, waits: pd.DataFrame, fx: pd.DataFrame, wait_site: str
) -> dict[str, Any] | None:
    """The releasers of this address (measured) and what they ran while holding it.

    For each wait with a known waker X: X held the lock from its own last acquisition of
    the address (the end of its last wait on it, or the start of this wait if later) until
    the release that ended this wait. What X ran then comes from py-spy's stacks of X that
    overlap those windows (leaf Python frame; a stack at the lock's own wait site is a
    sampling artefact, X cannot wait for a lock it holds), else from perf's on-CPU samples
    of X inside them (native leaf)."""
    w = waits.dropna(subset=["waker", "wake_t"])
    if w.empty:
        return None
    addr = str(waits["uaddr"].iloc[0])
    mine = fx[fx["uaddr"] == addr]
    acquired = (mine["t"] + mine["dur"]).to_numpy()
    acq_tid = mine["tid"].to_numpy()
    holders = w["waker"].astype(int).to_numpy()
    wake = w["wake_t"].to_numpy()
    start = w["t"].to_numpy().copy()
    # each holder's acquisitions, sorted: its last one before each wake, by binary search
    for h in np.unique(holders):
        times = np.sort(acquired[acq_tid == h])
        if not len(times):
            continue
        sel = np.flatnonzero(holders == h)
        k = np.searchsorted(times, wake[sel], side="right")
        hit = k > 0
        sel, k = sel[hit], k[hit]
        start[sel] = np.maximum(start[sel], times[k - 1])
    sites = _sites_in_windows(data, holders, start, wake, wait_site)
    threads = Counter(holders.tolist())
    tid = threads.most_common(1)[0][0]
    name = data.py_names.get(int(tid), "")
    total = sum(sites.values())
    return {
        "thread": f"{name} ({tid})" if name else str(tid),
        "site": sites.most_common(1)[0][0] if sites else "",
        "sites": [(s, _r(v / total, 3)) for s, v in sites.most_common(5)] if total else [],
        "threads": [
            {"tid": int(t), "name": data.py_names.get(int(t), ""), "releases": c}
            for t, c in threads.most_common(5)
        ],
        "releases_seen": len(w),
        "inferred": False,
        "source": "perf: the thread whose FUTEX_WAKE on the address (or wakeup) ended each wait",
    }


def _inside_region(stack: tuple[str, ...], wait_site: str) -> bool:
    """Does ``stack`` pass through the waiters' function at a line after ``wait_site``'s
    (the body of ``with lock:``)?"""
    m = re.match(r"^(.*) \((.*):(\d+)\)$", wait_site or "")
    if not m:
        return False
    name, file, line = m.group(1), m.group(2), int(m.group(3))
    for frame in stack:
        f = re.match(r"^(.*) \((.*):(\d+)\)$", frame)
        if f and f.group(1) == name and f.group(2) == file and int(f.group(3)) > line:
            return True
    return False


def _pairs(
    mask: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    side: Literal["left", "right"] = "left",
) -> tuple[np.ndarray, np.ndarray]:
    """Every (window, item) pair with the item inside the window, as two index arrays.

    Windows are ``start[i]..end[i]`` for ``i`` in ``mask``. Items are sorted; item ``k`` can
    be in window ``i`` from the first whose ``lows[k]`` is not before ``start[i]`` up to the
    last whose ``highs[k]`` is before ``end[i]`` (``side`` 'right': or at it). Points pass
    their times as both; intervals their ends as ``lows`` and their starts as ``highs``."""
    idx = np.flatnonzero(mask)
    lo = np.searchsorted(lows, start[idx], "left")
    n = np.clip(np.searchsorted(highs, end[idx], side) - lo, 0, None)
    w = np.repeat(idx, n)
    k = np.repeat(lo, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
    return w, k


def _sites_in_windows(
    data: BundleData, tids: np.ndarray, start: np.ndarray, end: np.ndarray, exclude: str
) -> Counter[str]:
    """Leaf frames of each thread within its time windows, weighted by time (py-spy) or
    by samples (perf on-CPU, when py-spy saw none)."""
    sites: Counter[str] = Counter()
    iv = data.py_intervals
    if iv is not None and not iv.empty:
        # py-spy's clock is aligned to the bundle's within a few ms, which is as long as a
        # critical section: a stack that overlaps a window is only counted when it is inside
        # the locked region (the waiters' function, past their line), where there is one.
        inside = {sid for sid, st in data.py_stacks.items() if _inside_region(st, exclude)}
        leaves = {
            sid: python_leaf(st)
            for sid, st in data.py_stacks.items()
            if not inside or sid in inside
        }
        mine = iv[iv["tid"].isin(set(tids.tolist()))].sort_values("start")
        names = sorted({x for x in leaves.values() if x and x != exclude})
        code = {name: i for i, name in enumerate(names)}
        acc = np.zeros(len(names))
        for t, g in mine.groupby("tid"):
            s, e = g["start"].to_numpy(), g["end"].to_numpy()
            codes = np.array([code.get(leaves.get(int(x), ""), -1) for x in g["stack_id"]])
            w, k = _pairs(tids == t, start, end, e, s)
            overlap = np.minimum(e[k], end[w]) - np.maximum(s[k], start[w])
            ok = (overlap > 0) & (codes[k] >= 0)
            acc += np.bincount(codes[k][ok], weights=overlap[ok], minlength=len(names))
        sites.update({names[i]: float(v) for i, v in enumerate(acc) if v > 0})
    ns = data.native_samples
    if not sites and ns is not None and not ns.empty:
        leaf_of: dict[int, str] = {}
        for t, g in ns[ns["tid"].isin(set(tids.tolist()))].sort_values("t").groupby("tid"):
            ts = g["t"].to_numpy()
            w, k = _pairs(tids == t, start, end, ts, ts, "right")
            for sid in g["stack_id"].to_numpy()[k]:
                if int(sid) not in leaf_of:
                    leaf_of[int(sid)] = user_leaf(data.native_stacks.get(int(sid), ()))
                if leaf_of[int(sid)]:
                    sites[leaf_of[int(sid)]] += 1.0
    return sites


# --- joining with the core analysis ----------------------------------------------------


def _measured_holders(a: Analysis, fx: pd.DataFrame | None) -> None:
    """Give each lock hot spot of the core analysis perf's measured holder and wait time."""
    m = a.metrics
    perf_locks = {d["address"]: d for d in a.extra.get("perf", {}).get("futex_locks", [])}
    for hot in a.locks:
        found = [perf_locks[x] for x in hot.get("addresses", []) if x in perf_locks]
        if not found:
            continue
        best = max(found, key=lambda d: float(d["wait_s"] or 0))
        hot["perf"] = {k: best[k] for k in ("waits", "wait_s", "native_sites", "blocked_waits")}
        if best["holder"] and best["holder"]["site"]:
            if hot.get("holder"):
                hot["holder_inferred"] = hot["holder"]
            hot["holder"] = best["holder"]
    if a.locks and m.get("lock_top_address") is not None:
        top = a.locks[0]
        holder = top.get("holder") or {}
        if holder:
            m["lock_top_holder_site"] = holder.get("site", "")
            m["lock_top_holder_source"] = "inferred" if holder.get("inferred", True) else "measured"
        else:
            m["lock_top_holder_source"] = ""


def _native_locks(data: BundleData, a: Analysis, fx: pd.DataFrame) -> None:
    """Threads without Python frames: mutex waits are lock time, not idle.

    Two ways, both measured: a /proc tick that saw the thread blocked in futex() on an
    address perf found to be a mutex (its waiters' native stacks in __lll_lock_wait, ...)
    moves that interval's blocked time to lock, like the core accounting does per tick; and
    where /proc saw no address, the time perf saw it in such a wait within the interval."""
    tt = a.thread_time
    if tt is None or fx is None or fx.empty:
        return
    per = tt.per_thread
    native_tids = set(per.loc[~per["python"].astype(bool), "tid"].astype(int).tolist())
    mtx = fx[(fx["kind"] == "lock") & fx["tid"].isin(native_tids)]
    m = a.metrics
    iv = tt.intervals
    moved = 0.0
    if not mtx.empty:
        mutexes = set(mtx["uaddr"].astype(str))
        at_mutex = iv["tid"].isin(native_tids) & (iv["idle"] > 0) & iv["futex_addr"].isin(mutexes)
        moved += float(iv.loc[at_mutex, "idle"].sum())
        iv.loc[at_mutex, "lock"] += iv.loc[at_mutex, "idle"]
        iv.loc[at_mutex, "idle"] = 0.0
        for tid, waits in mtx.groupby("tid"):
            moved += _move_overlap(iv, int(tid), waits)
    if moved > 0:
        sums = iv.groupby("tid")[list(STATES)].sum()
        per = per.set_index("tid")
        for s in STATES:
            per[s] = sums[s].reindex(per.index).fillna(0.0)
        per["total"] = per[list(STATES)].sum(axis=1)
        per["busy"] = per[list(BUSY_STATES)].sum(axis=1)
        tt.per_thread = per.reset_index()
        _thread_metrics(tt, data, m, a.series)
        a.per_thread = tt.per_thread
    busy = float(sum(iv[s].sum() for s in BUSY_STATES))
    m["native_lock_wait_share"] = _r(moved / busy, 4) if busy > 0 else 0.0
    if m.get("lock_top_address") is None:
        # no Python lock analysis (a native target): the hot spots come from perf
        locks = [
            d
            for d in a.extra.get("perf", {}).get("futex_locks", [])
            if set(fx.loc[fx["uaddr"] == d["address"], "tid"]) & native_tids
        ]
        busy_total = busy
        a.locks = [
            {
                "key": f"addr:{d['address']}",
                "address": d["address"],
                "addresses": [d["address"]],
                "waiters": d["waiters"],
                "waiter_threads": d["waiter_threads"],
                "wait_s": d["wait_s"],
                "share_of_busy": _r(float(d["wait_s"]) / busy_total, 4) if busy_total > 0 else 0.0,
                "site": d["site"],
                "sites": d["native_sites"],
                "max_concurrent_waiters": None,
                "holder": d["holder"],
                "source": "perf",
            }
            for d in locks
        ]
        if a.locks:
            top = a.locks[0]
            m["lock_hotspots"] = len(a.locks)
            m["lock_top_address"] = top["address"]
            m["lock_top_waiters"] = top["waiters"]
            m["lock_top_wait_s"] = top["wait_s"]
            m["lock_top_share"] = top["share_of_busy"]
            m["lock_top_site"] = top["site"]
            m["lock_top_holder_site"] = (top["holder"] or {}).get("site", "")
            m["lock_top_holder_source"] = "measured" if top["holder"] else ""
            m["lock_waiters_max"] = _max_concurrent(fx[fx["uaddr"] == top["address"]])
        elif native_tids:
            m["lock_hotspots"] = 0
            m["lock_top_waiters"] = 0
            m["lock_top_wait_s"] = 0.0
            m["lock_top_share"] = 0.0


def _move_overlap(iv: pd.DataFrame, tid: int, waits: pd.DataFrame) -> float:
    """Move idle time of ``tid``'s intervals that overlaps its mutex ``waits`` to lock."""
    s = waits["t"].to_numpy()
    e = s + waits["dur"].to_numpy()
    order = np.argsort(s)
    s, e = s[order], e[order]
    moved = 0.0
    for idx in iv.index[(iv["tid"] == tid) & (iv["idle"] > 0)]:
        b = float(iv.at[idx, "t"])
        a0 = b - float(iv.at[idx, "dt"])
        lo, hi = int(np.searchsorted(e, a0)), int(np.searchsorted(s, b))
        if hi <= lo:
            continue
        overlap = float(np.clip(np.minimum(e[lo:hi], b) - np.maximum(s[lo:hi], a0), 0, None).sum())
        shift = min(overlap, float(iv.at[idx, "idle"]))
        if shift > 0:
            iv.at[idx, "idle"] -= shift
            iv.at[idx, "lock"] += shift
            moved += shift
    return moved


def _max_concurrent(waits: pd.DataFrame) -> int:
    """Most waits in progress at once (a sweep over starts and ends)."""
    if waits.empty:
        return 0
    ev = np.concatenate(
        [
            np.stack([waits["t"], np.ones(len(waits))], 1),
            np.stack([waits["t"] + waits["dur"], -np.ones(len(waits))], 1),
        ]
    )
    ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]
    return int(np.cumsum(ev[:, 1]).max())


# --- c2c and counters ----------------------------------------------------------------------


def _c2c(data: BundleData, a: Analysis) -> None:
    b = data.bundle
    if not b.usable("c2c") or not b.has("c2c/lines.json"):
        return
    try:
        rep = b.json("c2c/lines.json")
    except BadBundle as exc:
        data.missing["c2c"] = str(exc)
        return
    if not isinstance(rep, dict):
        return
    m = a.metrics
    lines = [
        ln for ln in rep.get("lines", []) if isinstance(ln, dict) and (ln.get("hitm") or 0) > 0
    ]
    summary = rep.get("summary") or {}
    m["c2c_lines_contended"] = len(lines)
    loads = summary.get("Load Operations")
    hitm_total = (summary.get("Load Local HITM") or 0) + (summary.get("Load Remote HITM") or 0)
    if rep.get("metric") == "peer":
        hitm_total = (summary.get("Load HIT Local Peer") or 0) + (
            summary.get("Load HIT Remote Peer") or 0
        )
    if not hitm_total:
        hitm_total = sum(int(ln.get("hitm") or 0) for ln in lines)
    if loads:
        m["c2c_hitm_load_share"] = _r(hitm_total / float(loads), 4)
    if not lines:
        m["c2c_top_line_offsets"] = 0
        m["c2c_top_line_threads"] = 0
        m["c2c_top_line_hitm_share"] = 0.0
        m["c2c_top_line_address"] = ""
        m["c2c_top_line_symbols"] = ""
    else:
        top = max(lines, key=lambda ln: int(ln.get("hitm") or 0))
        acc = [x for x in top.get("accesses", []) if isinstance(x, dict)]
        m["c2c_top_line_address"] = str(top.get("address", ""))
        m["c2c_top_line_hitm_share"] = (
            _r(int(top.get("hitm") or 0) / hitm_total, 4) if hitm_total else None
        )
        m["c2c_top_line_offsets"] = len({x.get("offset") for x in acc if x.get("offset")})
        tids = {x.get("tid") for x in acc if x.get("tid") is not None}
        cpus = max((int(x.get("cpus") or 0) for x in acc), default=0)
        m["c2c_top_line_threads"] = len(tids) if tids else cpus
        syms = Counter()
        for x in acc:
            syms[str(x.get("source") or x.get("symbol") or "?")] += int(x.get("records") or 1)
        m["c2c_top_line_symbols"] = ", ".join(s for s, _ in syms.most_common(3))
    a.extra.setdefault("perf", {})["c2c"] = {
        "metric": rep.get("metric"),
        "lines": lines[:10],
        "summary": summary,
    }


def _counters(data: BundleData, a: Analysis) -> None:
    b = data.bundle
    if not b.usable("perf_stat") or not b.has("native/perf-stat.csv"):
        return
    with contextlib.suppress(BadBundle):
        counted = {
            c.event.split(":")[0]: c.value
            for c in parse_stat(b.text("native/perf-stat.csv"))
            if c.value is not None
        }
        m = a.metrics
        if counted.get("cycles") and "instructions" in counted:
            m["ipc"] = _r(counted["instructions"] / counted["cycles"], 3)
        if counted.get("cache-references") and "cache-misses" in counted:
            m["cache_miss_ratio"] = _r(counted["cache-misses"] / counted["cache-references"], 4)
        a.extra.setdefault("perf", {})["counters"] = counted


# --- entry point -------------------------------------------------------------------------


def analyse_perf(data: BundleData, frames: FrameRules, a: Analysis) -> None:
    """The extension: every perf view the bundle has (see the module doc)."""
    b = data.bundle
    if b.usable("perf_sched"):
        stacks = _stacks(data, "sched/stacks.csv")
        _sched(data, a, stacks)
        fx = _futex(data, frames, a, stacks)
        if fx is not None:
            _native_locks(data, a, fx)
            _measured_holders(a, fx)
    else:
        data.missing.setdefault("perf_sched", _reason(data, "perf_sched"))
    if a.locks and a.metrics.get("lock_top_holder_source") is None:
        holder = a.locks[0].get("holder")
        a.metrics["lock_top_holder_source"] = (
            ("inferred" if holder.get("inferred", True) else "measured") if holder else ""
        )
    _c2c(data, a)
    if not b.usable("c2c"):
        data.missing.setdefault("c2c", _reason(data, "c2c"))
    _counters(data, a)
    if not b.usable("perf_stat"):
        data.missing.setdefault("perf_stat", _reason(data, "perf_stat"))


def _reason(data: BundleData, name: str) -> str:
    rec = data.bundle.collector(name)
    return (
        f"{name} {rec.status.value}: {rec.reason}" if rec.reason else f"{name} {rec.status.value}"
    )
