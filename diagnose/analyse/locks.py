"""Locks: which locks threads waited on, how long, and who held them meanwhile.

A *hot spot* is a lock two or more threads waited on. Two sources find them:

- the /proc sampler's blocked ticks (the futex address each waiter was blocked on) with
  py-spy's stacks (where they waited: their leaf Python frame), in :func:`proc_locks`;
- perf's futex tracepoints (every wait, its address, its waiter's stacks, and the thread
  whose FUTEX_WAKE ended it), in :func:`perf_locks`: wait time per address, and for a
  native target the hot spots themselves.

One holder model (:class:`~diagnose.analyse.model.Holder`) for both: what the holder ran
while others waited is its leaf frame *inside the locked region*, by one rule
(:func:`~diagnose.analyse.frames.inside_region`). Perf's holder is measured (the releases
are recorded) and replaces py-spy's, which is inferred (a thread seen inside the region);
the inferred one is kept beside it. The ``lock_top_*`` metrics describe the first hot spot
and are written by :func:`top_lock_metrics` alone.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from diagnose.analyse.frames import inside_region, python_leaf, sync_caller, user_leaf
from diagnose.analyse.joins import TextCodes, map_distinct, pairs, python_stack_seen
from diagnose.analyse.load import BundleData
from diagnose.analyse.model import (
    BUSY_STATES,
    Context,
    Holder,
    HolderThread,
    Hotspot,
    ThreadTime,
    most_common,
    ratio,
    rounded,
    series_items,
)
from diagnose.words import count


def top_lock_metrics(hotspots: list[Hotspot]) -> dict[str, Any]:
    """The ``lock_*`` metrics of the first hot spot (measured absences without one)."""
    if not hotspots:
        return {
            "lock_hotspots": 0,
            "lock_top_address": "",
            "lock_top_waiters": 0,
            "lock_top_wait_s": 0.0,
            "lock_top_share": 0.0,
            "lock_top_site": "",
            "lock_top_holder_site": "",
            "lock_top_share_net": 0.0,
            "lock_waiters_max": 0,
        }
    top = hotspots[0]
    held_gil = top.holder.gil_wait_share if top.holder else None
    return {
        "lock_hotspots": len(hotspots),
        "lock_top_address": top.address,
        "lock_top_waiters": top.waiters,
        "lock_top_wait_s": top.wait_s,
        "lock_top_share": top.share_of_busy,
        "lock_top_site": top.site,
        "lock_top_holder_site": top.holder.site if top.holder else "",
        "lock_top_holder_gil_wait_share": held_gil,
        # the waits its holder's own work explains: less the part it spent queueing for the GIL
        "lock_top_share_net": None
        if top.share_of_busy is None
        else rounded(top.share_of_busy * (1 - (held_gil or 0.0)), 4),
        "lock_waiters_max": top.max_concurrent_waiters,
    }


def holder_source(holder: Holder | None) -> str:
    if holder is None:
        return ""
    return "measured" if holder.measured else "inferred"


# --- from /proc and py-spy -----------------------------------------------------------------


def proc_locks(ctx: Context) -> None:
    """Step: hot spots from the blocked ticks, with inferred holders."""
    tt, data = ctx.threads, ctx.data
    if tt is None or data.py_intervals is None:
        return
    iv = tt.intervals
    busy = float(sum(iv[s].sum() for s in BUSY_STATES))
    # the columns the hot spots read, not a copy of every column of the blocked ticks
    lk = iv.loc[
        (iv["lock"] > 0) & (iv["futex_addr"] != ""),
        ["t", "tid", "lock", "futex_addr", "wait_leaf", "stack_id", "wait_t"],
    ]
    # a site is where py-spy saw the waiter again after the tick: the sample before a short
    # wait is often the line before it (np.ones waiting for the GIL, not for this lock)
    period = 1.0 / data.pyspy_rate
    seen = python_stack_seen(
        data.py_intervals, lk["wait_t"].to_numpy(), lk["tid"].to_numpy(), period
    )[1]
    lk = lk.assign(seen=seen)
    # a Condition's or a queue's wait blocks on a lock made per wait: the caller is the lock
    callers = {
        int(sid): sync_caller(data.py_stacks.get(int(sid), ()))
        for sid in lk["stack_id"].dropna().unique()
    }
    caller = lk["stack_id"].map(lambda sid: callers.get(int(sid), "") if sid == sid else "")
    lk = lk.assign(wait_leaf=caller.where(caller != "", lk["wait_leaf"]), sync=caller != "")
    hotspots: list[Hotspot] = []
    for key, addrs in _lock_groups(lk, _concurrent_waits(ctx.futex, lk)).items():
        grp = lk[lk["futex_addr"].isin(addrs)]
        if grp["tid"].nunique() >= 2:
            hotspots.append(_proc_hotspot(key, addrs, grp, busy, iv, data))
    hotspots.sort(key=lambda h: -float(h.wait_s or 0))
    ctx.hotspots = hotspots
    ctx.out.locks = [h.to_dict() for h in hotspots]
    ctx.metrics.update(top_lock_metrics(hotspots))


def _concurrent_waits(fx: pd.DataFrame | None, lk: pd.DataFrame) -> dict[str, int]:
    """Most of perf's futex waits in progress at once on each address the blocked ticks
    name (a tick is longer than a short wait: two waits in one tick may not overlap)."""
    if fx is None or fx.empty or "blocked" not in fx:
        return {}
    waits = fx[(fx["blocked"] > 0) & fx["uaddr"].isin(set(lk["futex_addr"].unique()))]
    return {str(a): max_concurrent(grp) for a, grp in waits.groupby("uaddr")}


def _lock_groups(lk: pd.DataFrame, concurrent: Mapping[str, int]) -> dict[str, list[str]]:
    """Addresses by lock: one address, or, for addresses with one waiter each but the same
    Python site, that site (one lock seen through per-thread wait words: Python 3.13's
    parking lot)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for addr, grp in lk.groupby("futex_addr"):
        per_wait = _per_wait(grp, concurrent.get(str(addr)))
        if per_wait:
            grp = grp[grp["sync"]] if "sync" in grp else grp
        if grp["tid"].nunique() >= 2 and not per_wait:
            groups[f"addr:{addr}"].append(str(addr))
            continue
        sites = _sites(grp)
        site = sites.most_common(1)[0][0] if sites else ""
        if site:
            groups[f"site:{site}"].append(str(addr))
        else:
            # waits of words made per wait whose stacks py-spy missed: one queue, unnamed
            groups["site:" if per_wait else f"addr:{addr}"].append(str(addr))
    return groups


def _per_wait(grp: pd.DataFrame, concurrent: int | None) -> bool:
    """Whether one address's waits are on words made for one wait and freed (a Condition's
    or a queue's, reused by later waits): judged on the ticks whose Python stack py-spy
    saw; where it saw none (threads shorter than its period), by their never overlapping
    (``concurrent``: perf's waits, else the ticks): two threads queued at once on one word
    are a queue in front of one lock."""
    known = grp["stack_id"].fillna(-1).to_numpy() >= 0 if "stack_id" in grp else None
    if known is not None and known.any():
        seen = grp[known]
        sync = seen["sync"] if "sync" in seen else pd.Series(False, index=seen.index)
        return float(seen.loc[sync, "lock"].sum()) >= 0.5 * float(seen["lock"].sum())
    if concurrent is None:
        concurrent = int(grp.groupby("t")["tid"].nunique().max())
    return grp["tid"].nunique() >= 2 and concurrent <= 1


def _sites(grp: pd.DataFrame) -> Counter[str]:
    """The waiters' leaf frames, from the ticks py-spy confirmed (all, if it confirmed none)."""
    sure = grp[grp["seen"]] if "seen" in grp and grp["seen"].any() else grp
    return Counter(x for x in sure["wait_leaf"].tolist() if x)


def _proc_hotspot(
    key: str, addrs: list[str], grp: pd.DataFrame, busy: float, iv: pd.DataFrame, data: BundleData
) -> Hotspot:
    wait_s = float(grp["lock"].sum())
    sites = _sites(grp)
    site = sites.most_common(1)[0][0] if sites else ""
    by_thread = grp.groupby("tid")["lock"].sum().sort_values(ascending=False).head(20)
    return Hotspot(
        key=key,
        address=addrs[0] if key.startswith("addr:") else count(len(addrs), "address"),
        addresses=addrs[:20],
        waiters=grp["tid"].nunique(),
        waiter_threads=[
            {"tid": int(t), "name": data.py_names.get(int(t), ""), "wait_s": rounded(float(s), 3)}
            for t, s in series_items(by_thread)
        ],
        wait_s=rounded(wait_s, 3),
        share_of_busy=rounded(ratio(wait_s, busy), 4) if busy > 0 else 0.0,
        site=site,
        sites=[(s, n) for s, n in sites.most_common(5)],
        max_concurrent_waiters=int(grp.groupby("t")["tid"].nunique().max()),
        holder=inferred_holder(iv, grp, site, data),
        stacks=_waiter_stacks(grp, data),
    )


def _waiter_stacks(waits: pd.DataFrame, data: BundleData, n: int = 3) -> list[dict[str, Any]]:
    """The Python stacks the waiters of one lock waited in, longest total wait first."""
    known = waits[waits["stack_id"] >= 0]
    top = known.groupby("stack_id")["lock"].sum().sort_values(ascending=False).head(n)
    return [
        {"frames": list(data.py_stacks.get(int(sid), ())), "wait_s": rounded(float(w), 3)}
        for sid, w in series_items(top)
    ]


def inferred_holder(
    iv: pd.DataFrame, waits: pd.DataFrame, site: str, data: BundleData
) -> Holder | None:
    """At ticks where threads waited, a thread running (or runnable) inside the locked
    region; what it ran is its most common leaf frame there."""
    if not site:
        return None
    cand = iv[
        iv["t"].isin(waits["t"].unique())
        & ((iv["running"] > 0) | (iv["runnable"] > 0))
        & (iv["stack_id"] >= 0)
    ]
    # not the waiters themselves at the ticks they waited
    waiting = pd.MultiIndex.from_arrays([waits["t"], waits["tid"]])
    cand = cand[~pd.MultiIndex.from_arrays([cand["t"], cand["tid"]]).isin(waiting)]

    def leaf_inside(sid: int) -> str:
        st = data.py_stacks.get(int(sid), ())
        return st[-1] if st and inside_region(st, site) else ""

    inside = map_distinct(cand["stack_id"], leaf_inside)
    hit = inside != ""
    leaves: Counter[str] = Counter(inside[hit].tolist())
    threads: Counter[int] = Counter(int(t) for t in cand["tid"].to_numpy()[hit])
    if not leaves:
        return None
    leaf, ticks = leaves.most_common(1)[0]
    return Holder(
        site=leaf,
        threads=tuple(
            HolderThread(t, data.py_names.get(t, ""), c) for t, c in threads.most_common(5)
        ),
        measured=False,
        evidence=ticks,
    )


# --- from perf's futex tracepoints ---------------------------------------------------------


@dataclass(frozen=True)
class FutexLock:
    """A lock address two or more threads waited on, as perf's futex tracepoints saw it."""

    address: str
    waiters: int
    waits: int
    wait_s: float | None
    blocked_waits: int | None  # waits that really slept (the rest found the lock free)
    site: str  # the waiters' most common leaf Python frame, else native frame
    sites: list[tuple[str, int]]
    native_sites: list[tuple[str, int]]
    waiter_threads: list[dict[str, Any]]
    holder: Holder | None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["holder"] = self.holder.to_dict() if self.holder else None
        return out


def perf_locks(ctx: Context) -> None:
    """Step: futex wait time by lock address with measured holders, native threads' mutex
    waits, and the holder source of the top hot spot."""
    fx = ctx.futex
    if fx is not None:
        perf = _futex_metrics(ctx, fx)
        if ctx.threads is not None and not fx.empty:
            _native_locks(ctx, ctx.threads, fx, perf)
        _attach_measured(ctx.hotspots, perf)
    if ctx.hotspots:
        ctx.metrics.update(top_lock_metrics(ctx.hotspots))
        ctx.metrics["lock_top_holder_source"] = holder_source(ctx.hotspots[0].holder)
        ctx.out.locks = [h.to_dict() for h in ctx.hotspots]
    gil_behind_locks(ctx.metrics)


def lock_owner(ctx: Context) -> None:
    """Step: whose lock the top hot spot is, by where it lies. A lock in a library's own data
    (a static mutex: OpenBLAS serialising concurrent threaded GEMMs) is that library's, not
    the application's, whatever line of the application's waits on it; a lock of a native
    pool's library is the pool's (frames.toml ``[[pool]]``)."""
    m = ctx.metrics
    address = m.get("lock_top_address")
    if address is None:
        return
    m["lock_top_pool"] = ""  # none found: also where the maps were not recorded
    segments = ctx.data.system.get("data_segments")
    if not isinstance(address, str) or not address.startswith("0x") or segments is None:
        return
    try:
        at = int(address, 16)
    except ValueError:
        return
    library = ""
    for seg in segments:
        try:
            if int(seg["start"], 16) <= at < int(seg["end"], 16):
                library = str(seg["library"])
                break
        except (KeyError, TypeError, ValueError):
            continue
    pool = ctx.frames.pool_of_library(library) if library else None
    m["lock_top_library"] = library
    m["lock_top_pool"] = pool.name if pool else ""


def gil_behind_locks(m: dict[str, Any]) -> None:
    """``busy_share_gil_all``: the GIL waits, plus the waits on the top lock whose holder
    was itself queueing for the GIL (measured by perf; nothing is added where it was not).
    Threads queued on a lock whose holder waits for the GIL wait for the GIL too: a model
    lock held across a GIL release and re-take is as slow as the Python code that holds the
    GIL meanwhile (docs/accuracy.md, "Per-threshold evidence")."""
    gil = m.get("busy_share_gil")
    if gil is None:
        return
    held_gil, share = m.get("lock_top_holder_gil_wait_share"), m.get("lock_top_share")
    behind = share * held_gil if held_gil is not None and share is not None else 0.0
    m["busy_share_gil_all"] = rounded(min(1.0, gil + behind), 4)


def _futex_metrics(ctx: Context, fx: pd.DataFrame) -> list[FutexLock]:
    m = ctx.metrics
    if fx.empty:
        m["futex_wait_s"] = 0.0
        m["futex_lock_wait_s"] = 0.0
        return []
    m["futex_wait_s"] = rounded(float(fx["dur"].sum()), 3)
    lk = fx[TextCodes(fx["kind"]).eq("lock")]
    m["futex_lock_wait_s"] = rounded(float(lk["dur"].sum()), 3)
    # the waiters' sites py-spy and /proc agree on (blocked ticks, one clock), by address
    blocked_sites = {a: h.site for h in ctx.hotspots if h.site for a in h.addresses}
    locks = futex_locks(ctx.data, lk, fx, blocked_sites)
    ctx.out.extra.setdefault("perf", {})["futex_locks"] = [d.to_dict() for d in locks]
    top = locks[0] if locks else None
    m["futex_top_address"] = top.address if top else ""
    m["futex_top_waiters"] = top.waiters if top else 0
    m["futex_top_wait_s"] = top.wait_s if top else 0.0
    m["futex_top_site"] = top.site if top else ""
    m["futex_top_holder"] = top.holder.thread if top and top.holder else ""
    m["futex_top_holder_site"] = top.holder.site if top and top.holder else ""
    return locks


def futex_locks(
    data: BundleData,
    lk: pd.DataFrame,
    fx: pd.DataFrame,
    blocked_sites: dict[str, str] | None = None,
) -> list[FutexLock]:
    """Lock addresses two or more threads waited on, longest wait first, with holders.

    The waiters' site is the Python frame py-spy saw them in around their waits. A wait
    shorter than py-spy's period, placed on py-spy's samples across two clocks, often
    takes the stack sampled just before it (the line before the ``with lock:``, where the
    thread queued for the GIL); the site of the blocked ticks of the same address
    (``blocked_sites``: /proc's blocked time, one clock with py-spy, weighted by time)
    is preferred when the waits saw it too."""
    out = []
    for addr, grp in lk.groupby("uaddr"):
        waiters = grp["tid"].nunique()
        if waiters < 2:
            continue
        sites = Counter(s for s in grp["py_leaf"].tolist() if s)
        natives = Counter(s for s in grp["native"].tolist() if s)
        site = (sites or natives).most_common(1)[0][0] if (sites or natives) else ""
        blocked = (blocked_sites or {}).get(str(addr), "")
        if blocked and sites.get(blocked):
            site = blocked
        by_thread = grp.groupby("tid")["dur"].sum().sort_values(ascending=False).head(20)
        out.append(
            FutexLock(
                address=str(addr),
                waiters=int(waiters),
                waits=len(grp),
                wait_s=rounded(float(grp["dur"].sum()), 4),
                blocked_waits=int(grp["blocked"].sum()) if "blocked" in grp else None,
                site=site,
                sites=sites.most_common(5),
                native_sites=natives.most_common(5),
                waiter_threads=[
                    {
                        "tid": int(t),
                        "name": data.py_names.get(int(t), ""),
                        "wait_s": rounded(float(w), 4),
                    }
                    for t, w in series_items(by_thread)
                ],
                holder=measured_holder(data, grp, fx, site),
            )
        )
    out.sort(key=lambda d: -float(d.wait_s or 0))
    return out[:20]


def measured_holder(
    data: BundleData, waits: pd.DataFrame, fx: pd.DataFrame, wait_site: str
) -> Holder | None:
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
    sites = sites_in_windows(data, holders, start, wake, wait_site)
    gil_share = gil_wait_in_windows(fx, holders, start, wake)
    threads = Counter(holders.tolist())
    total = sum(sites.values())
    return Holder(
        site=most_common(sites, 1)[0][0] if sites else "",
        threads=tuple(
            HolderThread(int(t), data.py_names.get(int(t), ""), c)
            for t, c in threads.most_common(5)
        ),
        measured=True,
        evidence=len(w),
        sites=tuple((s, rounded(v / total, 3)) for s, v in most_common(sites, 5)) if total else (),
        gil_wait_share=gil_share,
    )


def gil_wait_in_windows(
    fx: pd.DataFrame,
    tids: npt.NDArray[np.integer[Any]],
    start: npt.NDArray[np.float64],
    end: npt.NDArray[np.float64],
) -> float | None:
    """The share of the holders' hold windows (tid, start, end) they spent waiting for the
    GIL (perf's futex waits on it). A lock held by a thread that waits for the GIL is as
    slow as whatever holds the GIL. Windows that end at one release are counted once; None
    without GIL waits to tell (a target without the GIL, or perf did not see its address)."""
    if "kind" not in fx:
        return None
    gil = fx[fx["kind"] == "gil"]
    if gil.empty:
        return None
    windows = pd.DataFrame({"tid": tids, "start": start, "end": end}).drop_duplicates(
        subset=["tid", "end"]
    )
    held = float((windows["end"] - windows["start"]).clip(lower=0).sum())
    if held <= 0:
        return None
    waited = 0.0
    by_tid = dict(tuple(gil.groupby("tid")))
    for tid, g in windows.groupby("tid"):
        mine = by_tid.get(tid)
        if mine is None:
            continue
        waited += float(
            covered_within(
                merged_intervals(mine["t"].to_numpy(), (mine["t"] + mine["dur"]).to_numpy()),
                g["start"].to_numpy(),
                g["end"].to_numpy(),
            ).sum()
        )
    return rounded(min(1.0, waited / held), 3)


Intervals = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]


def merged_intervals(starts: npt.NDArray[np.float64], ends: npt.NDArray[np.float64]) -> Intervals:
    """Intervals merged where they overlap, sorted: (starts, ends, time covered before each)."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    if not len(s):
        return s, e, np.zeros(1)
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    ms = s[first]
    me = np.maximum.reduceat(e, first)
    before = np.concatenate(([0.0], np.cumsum(me - ms)))
    return ms, me, before


def covered_until(iv: Intervals, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Time the merged intervals cover before each x."""
    s, e, before = iv
    if not len(s):
        return np.zeros(len(x))
    k = np.searchsorted(s, x, side="right")  # intervals starting at or before x
    j = np.maximum(k - 1, 0)
    partial = np.clip(np.minimum(e[j], x) - s[j], 0, None)
    return np.where(k > 0, before[j] + partial, 0.0)


def covered_within(
    iv: Intervals, a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """How long the merged intervals cover inside each window [a, b] (0 for an empty one)."""
    return np.clip(covered_until(iv, np.maximum(a, b)) - covered_until(iv, a), 0, None)


def sites_in_windows(
    data: BundleData,
    tids: npt.NDArray[np.integer[Any]],
    start: npt.NDArray[np.float64],
    end: npt.NDArray[np.float64],
    exclude: str,
) -> dict[str, float]:
    """Leaf frames of each thread within its time windows, weighted by time (py-spy) or
    by samples (perf on-CPU, when py-spy saw none)."""
    sites: dict[str, float] = defaultdict(float)
    iv = data.py_intervals
    if iv is not None and not iv.empty:
        # py-spy's clock is aligned to the bundle's within a few ms, which is as long as a
        # critical section: a stack that overlaps a window is only counted when it is inside
        # the locked region (the waiters' function, past their line), where there is one.
        inside = {sid for sid, st in data.py_stacks.items() if inside_region(st, exclude)}
        leaves = {
            sid: python_leaf(st)
            for sid, st in data.py_stacks.items()
            if not inside or sid in inside
        }
        mine = iv[iv["tid"].isin(set(tids.tolist()))].sort_values("start")
        names = sorted({x for x in leaves.values() if x and x != exclude})
        code = {name: i for i, name in enumerate(names)}
        acc = np.zeros(len(names))
        # stack id -> its leaf's code (-1: none), looked up for every interval at once
        lut = np.full(max(data.py_stacks, default=-1) + 2, -1, dtype=np.int64)
        for sid, leaf in leaves.items():
            if sid >= 0:
                lut[sid] = code.get(leaf, -1)
        for t, g in mine.groupby("tid"):
            s, e = g["start"].to_numpy(), g["end"].to_numpy()
            ids = g["stack_id"].to_numpy(dtype=np.int64)
            codes = lut[np.where((ids >= 0) & (ids < len(lut) - 1), ids, len(lut) - 1)]
            w, k = pairs(tids == t, start, end, e, s)
            overlap = np.minimum(e[k], end[w]) - np.maximum(s[k], start[w])
            ok = (overlap > 0) & (codes[k] >= 0)
            acc += np.bincount(codes[k][ok], weights=overlap[ok], minlength=len(names))
        sites.update({names[i]: float(v) for i, v in enumerate(acc) if v > 0})
    ns = data.native_samples
    if not sites and ns is not None and not ns.empty:
        leaf_of: dict[int, str] = {}
        for t, g in ns[ns["tid"].isin(set(tids.tolist()))].sort_values("t").groupby("tid"):
            ts = g["t"].to_numpy()
            _, k = pairs(tids == t, start, end, ts, ts, "right")
            for sid in g["stack_id"].to_numpy()[k]:
                if int(sid) not in leaf_of:
                    leaf_of[int(sid)] = user_leaf(data.native_stacks.get(int(sid), ()))
                if leaf_of[int(sid)]:
                    sites[leaf_of[int(sid)]] += 1.0
    return sites


def _native_locks(ctx: Context, tt: ThreadTime, fx: pd.DataFrame, perf: list[FutexLock]) -> None:
    """Native threads' mutex waits (moved from idle to lock by the thread-state step): their
    share of busy time, and, for a target without Python stacks, the hot spots themselves."""
    m, iv = ctx.metrics, tt.intervals
    busy = float(sum(iv[s].sum() for s in BUSY_STATES))
    m["native_lock_wait_share"] = rounded(tt.native_mutex_s / busy, 4) if busy > 0 else 0.0
    if ctx.data.py_intervals is not None:
        return  # the hot spots came from /proc and py-spy
    per = tt.per_thread
    native_tids = set(per.loc[~per["python"].astype(bool), "tid"].astype(int).tolist())
    waiters = fx.groupby("uaddr")["tid"].agg(set)
    hotspots = [
        _perf_hotspot(d, fx, busy) for d in perf if waiters.get(d.address, set()) & native_tids
    ]
    if hotspots or native_tids:
        ctx.hotspots = hotspots
        m.update(top_lock_metrics(hotspots))


def _perf_hotspot(d: FutexLock, fx: pd.DataFrame, busy: float) -> Hotspot:
    return Hotspot(
        key=f"addr:{d.address}",
        address=d.address,
        addresses=[d.address],
        waiters=d.waiters,
        waiter_threads=d.waiter_threads,
        wait_s=d.wait_s,
        share_of_busy=rounded(float(d.wait_s or 0) / busy, 4) if busy > 0 else 0.0,
        site=d.site,
        sites=list(d.native_sites),
        max_concurrent_waiters=max_concurrent(fx[fx["uaddr"] == d.address]),
        holder=d.holder,
        source="perf",
    )


def _attach_measured(hotspots: list[Hotspot], perf: list[FutexLock]) -> None:
    """Give each hot spot perf's view of its addresses: wait time, and the measured holder
    in place of the inferred one (kept as ``holder_inferred``)."""
    by_address = {d.address: d for d in perf}
    for hot in hotspots:
        found = [by_address[x] for x in hot.addresses if x in by_address]
        if not found:
            continue
        best = max(found, key=lambda d: float(d.wait_s or 0))
        hot.perf = {
            "waits": best.waits,
            "wait_s": best.wait_s,
            "native_sites": best.native_sites,
            "blocked_waits": best.blocked_waits,
        }
        if not best.holder or hot.source == "perf":
            continue
        measured = best.holder
        if not measured.site and hot.holder and hot.holder.site:
            # perf saw who released it, but no sample fell inside their hold windows (a
            # starved sampler): what ran inside the region is the inferred holder's site
            measured = replace(measured, site=hot.holder.site)
        if measured.site:
            if hot.holder:
                hot.holder_inferred = hot.holder
            hot.holder = measured


def max_concurrent(waits: pd.DataFrame) -> int:
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
