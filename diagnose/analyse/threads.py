"""Thread-time accounting: where each thread's wall time went, tick by tick.

Between two ticks of the /proc sampler a thread's time is split with the kernel's own
counters (schedstat): ``running`` = on-CPU time, ``runnable`` = time on a run queue waiting
for a core, and the rest, off-CPU, is put in the wait class observed at the tick (or at the
tick before, when the thread was runnable at the end):

- ``gil``: blocked in futex() on an address inside the interpreter's ``_PyRuntime``, where
  CPython keeps the GIL;
- ``lock``: any other futex wait of a Python thread whose leaf frame is not a queue,
  condition or event wait (rules/frames.toml ``[waits]``), e.g. ``with MODEL_LOCK:``;
- ``io``: uninterruptible sleep (disk), socket/pipe/file reads and writes, or a wait whose
  leaf frame is in an HTTP/database client;
- ``idle``: sleeping, waiting for work (queue, condition, event, accept, epoll with no
  I/O frame), and futex waits of native threads (thread pools parked between jobs);
- ``other``: stopped, or blocked in a call we do not classify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from diagnose.analyse.arch import Syscalls
from diagnose.analyse.frames import FrameRules, is_native_frame
from diagnose.analyse.load import BundleData, map_distinct

STATES = ("running", "runnable", "gil", "lock", "io", "idle", "other")
BUSY_STATES = ("running", "runnable", "gil", "lock", "io")


@dataclass
class ThreadTime:
    """The per-interval table and what was derived from it."""

    intervals: pd.DataFrame  # one row per thread per tick interval, with seconds per state
    per_thread: pd.DataFrame  # one row per thread
    window: float  # seconds covered by the /proc sampler
    gil_range: tuple[int, int] | None


def gil_range(system: dict[str, Any]) -> tuple[int, int] | None:
    rt = (system.get("python") or {}).get("runtime") or {}
    try:
        return int(str(rt["start"]), 16), int(str(rt["end"]), 16)
    except (KeyError, TypeError, ValueError):
        return None


def _hex_to_float(s: pd.Series) -> pd.Series:
    """'0x55d..' -> float (exact below 2**53, which user-space addresses are)."""

    def conv(v: Any) -> float:
        if isinstance(v, str) and v.startswith("0x"):
            try:
                return float(int(v, 16))
            except ValueError:
                return np.nan
        return np.nan

    return pd.Series(map_distinct(s, conv), index=s.index, dtype="float64")


def join_python_stacks(ticks: pd.DataFrame, data: BundleData, tolerance: float = 0.06) -> pd.Series:
    """The Python stack id each thread was in at each tick (-1 where unknown)."""
    iv = data.py_intervals
    out = pd.Series(-1, index=ticks.index, dtype="int64")
    if iv is None or iv.empty or ticks.empty:
        return out
    left = ticks[["t", "tid"]].reset_index().sort_values("t")
    right = iv.sort_values("start")
    merged = pd.merge_asof(
        left, right, left_on="t", right_on="start", by="tid", direction="backward"
    )
    ok = merged["stack_id"].notna() & (merged["t"] <= merged["end"] + tolerance)
    merged.loc[~ok, "stack_id"] = -1
    out.loc[merged["index"].to_numpy()] = merged["stack_id"].fillna(-1).astype("int64").to_numpy()
    return out


def python_leaf(stack: tuple[str, ...]) -> str:
    for frame in reversed(stack):
        if not is_native_frame(frame):
            return frame
    return ""


def classify_waits(
    df: pd.DataFrame,
    leaf_kind: pd.Series,
    has_py: pd.Series,
    gil: tuple[int, int] | None,
    calls: Syscalls,
) -> pd.Series:
    """The wait class of each row, as if the thread were off-CPU (see module doc).

    ``leaf_kind`` is "" where the thread's Python stack at that moment is unknown (before
    py-spy's first sample, say): a futex wait of a Python thread is then "other", since
    nothing says whether it waits for a lock or for work.
    """
    state = df["state"].astype(str)
    sc = pd.to_numeric(df.get("syscall"), errors="coerce")
    addr = _hex_to_float(df.get("arg0", pd.Series("", index=df.index)))
    futex = sc.isin(calls.futex)
    in_gil = pd.Series(False, index=df.index)
    if gil is not None:
        in_gil = futex & (addr >= gil[0]) & (addr < gil[1])
    lk = leaf_kind.fillna("")
    conds = [
        state.isin(["T", "t"]),
        state == "D",
        in_gil,
        futex & (lk == "idle"),
        futex & (lk == "io"),
        futex & has_py & leaf_kind.notna(),
        futex & has_py,
        futex,
        sc.isin(calls.accept),
        sc.isin(calls.io) & (lk == "idle"),
        sc.isin(calls.io),
        sc.isin(calls.poll) & (lk == "io"),
        sc.isin(calls.poll),
        sc.isin(calls.sleep),
        state == "R",
    ]
    choices = ["other", "io", "gil", "idle", "io", "lock", "other", "idle", "idle", "idle", "io",
               "io", "idle", "idle", "runnable"]  # fmt: skip
    return pd.Series(np.select(conds, choices, default="other"), index=df.index)


def thread_time(data: BundleData, frames: FrameRules) -> ThreadTime | None:
    df = data.threads
    if df is None or df.empty:
        return None
    df = df.sort_values(["tid", "t"]).reset_index(drop=True)
    stack_ids = join_python_stacks(df, data)
    df["stack_id"] = stack_ids
    leaves = {sid: python_leaf(st) for sid, st in data.py_stacks.items()}
    df["py_leaf"] = map_distinct(df["stack_id"], lambda sid: leaves.get(sid, ""))
    # the wait kind of the leaf frame: "idle" | "lock" | "io", "" for none, None: no stack
    leaf_kind = pd.Series(
        map_distinct(df["py_leaf"], lambda f: (frames.wait_kind(f) or "") if f else None),
        index=df.index,
    )
    py_tids = set(data.py_names) if data.py_names else set()
    if data.py_intervals is not None:
        py_tids |= set(data.py_intervals["tid"].unique().tolist())
    has_py = df["tid"].isin(py_tids)
    gr = gil_range(data.system)
    calls = Syscalls.of(data.machine)
    df["wait_class"] = classify_waits(df, leaf_kind, has_py, gr, calls)

    g = df.groupby("tid", sort=False)
    dt = g["t"].diff()
    d_on = g["oncpu_ns"].diff() / 1e9 if "oncpu_ns" in df else pd.Series(np.nan, index=df.index)
    d_rq = g["runq_ns"].diff() / 1e9 if "runq_ns" in df else pd.Series(np.nan, index=df.index)
    d_sl = g["slices"].diff() if "slices" in df else pd.Series(np.nan, index=df.index)
    prev_class = g["wait_class"].shift(1)
    valid = dt.notna() & (dt > 0)
    iv = df.loc[valid, ["t", "tid", "state", "cpu", "stack_id", "py_leaf", "wait_class"]].copy()
    iv["dt"] = dt[valid]
    on = d_on[valid].clip(lower=0).fillna(0.0)
    rq = d_rq[valid].clip(lower=0).fillna(0.0)
    iv["running"], iv["runnable"], off = _split_interval_time(iv["tid"], iv["dt"], on, rq)
    iv["slices"] = d_sl[valid].clip(lower=0).fillna(0.0)
    end_cls = iv["wait_class"]
    start_cls = prev_class[valid].fillna("other")
    off_cls = np.where(
        end_cls == "runnable", np.where(start_cls == "runnable", "other", start_cls), end_cls
    )
    iv["off_class"] = off_cls
    for s in ("gil", "lock", "io", "idle", "other"):
        iv[s] = np.where(iv["off_class"] == s, off, 0.0)
    # where the off-CPU time was spent: the tick whose wait class it took (the interval's
    # end, or its start when the thread was runnable again at the end)
    addr = _futex_addr(df, calls)
    from_start = (end_cls == "runnable").to_numpy()
    iv["futex_addr"] = np.where(
        from_start, addr.groupby(df["tid"]).shift(1)[valid].fillna(""), addr[valid]
    )
    iv["wait_leaf"] = np.where(
        from_start, g["py_leaf"].shift(1)[valid].fillna(""), iv["py_leaf"].to_numpy()
    )
    iv = iv.reset_index(drop=True)

    per = iv.groupby("tid")[list(STATES)].sum()
    per["total"] = per[list(STATES)].sum(axis=1)
    per["busy"] = per[list(BUSY_STATES)].sum(axis=1)
    first = df.groupby("tid").first()
    last = df.groupby("tid").last()
    per["comm"] = first["comm"].astype(str) if "comm" in first else ""
    per["name"] = [data.py_names.get(int(t), "") for t in per.index]
    per["python"] = [int(t) in py_tids for t in per.index]
    for col in ("vcsw", "ivcsw", "migrations"):
        if col in df:
            counter = pd.to_numeric(df[col], errors="coerce").groupby(df["tid"])
            per[col] = (counter.last() - counter.first()).reindex(per.index)
        else:
            per[col] = np.nan
    per["seconds_seen"] = (last["t"] - first["t"]).reindex(per.index)
    per["role"] = [
        thread_role(n, c, p)
        for n, c, p in zip(per["name"], per["comm"], per["python"], strict=True)
    ]
    window = float(df["t"].max() - df["t"].min()) if len(df) > 1 else 0.0
    return ThreadTime(iv, per.reset_index(), window, gr)


def _split_interval_time(
    tid: pd.Series, dt: pd.Series, on: pd.Series, rq: pd.Series
) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Running, runnable and off-CPU seconds of each interval, exact per thread.

    The kernel adds a run-queue wait to ``run_delay`` only when the waiting thread gets a
    CPU, so under heavy queueing the counters lag: one interval shows a gap (on + rq < dt)
    that is really queueing still to be counted, a later one more than dt. Clipping each
    interval would turn that lag into blocked time and lose queueing. Instead each thread
    keeps its exact totals (the counters' increase over the window), and its off-CPU time,
    window minus running minus runnable, is spread over the intervals in proportion to
    their gaps.
    """
    gap = dt - on - rq
    pos = gap.clip(lower=0)
    off_total = gap.groupby(tid).transform("sum").clip(lower=0)
    pos_total = pos.groupby(tid).transform("sum")
    off = pos * (off_total / pos_total.replace(0, np.nan)).fillna(0.0).clip(upper=1.0)
    # a wait in progress at the first tick is counted later: keep running + runnable <= window
    busy_total = (on + rq).groupby(tid).transform("sum")
    window = dt.groupby(tid).transform("sum")
    scale = (window / busy_total.replace(0, np.nan)).clip(upper=1.0).fillna(1.0)
    return on * scale, rq * scale, off


def _futex_addr(df: pd.DataFrame, calls: Syscalls) -> pd.Series:
    """The futex address each row's thread was blocked on ("" when not in futex())."""
    sc = pd.to_numeric(df.get("syscall"), errors="coerce")
    arg = df.get("arg0", pd.Series("", index=df.index)).astype(str)
    return arg.where(sc.isin(calls.futex), "")


_DIGITS = re.compile(r"[\d_-]*\d[\d_-]*$")


def thread_role(name: str, comm: str, python: bool) -> str:
    """Group threads that do the same job: 'ThreadPoolExecutor-0_3' -> 'ThreadPoolExecutor-*'."""
    base = name if python and name else comm
    base = (base or "?").strip()
    stripped = _DIGITS.sub("", base).rstrip(" -_:.(") or base
    role = stripped + ("-*" if stripped != base else "")
    return role if python else f"{role} (native)"
