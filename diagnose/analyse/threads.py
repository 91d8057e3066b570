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

from diagnose.analyse.frames import FrameRules, is_native_frame
from diagnose.analyse.load import BundleData
from diagnose.collect.procfs import syscall_table

STATES = ("running", "runnable", "gil", "lock", "io", "idle", "other")
BUSY_STATES = ("running", "runnable", "gil", "lock", "io")

_NAMES = syscall_table()
_BY_NAME = {v: k for k, v in _NAMES.items()}


def _nrs(*names: str) -> list[int]:
    return [_BY_NAME[n] for n in names if n in _BY_NAME]


FUTEX = _nrs("futex", "futex_wait", "futex_waitv")
IO_CALLS = _nrs(
    "read", "write", "pread64", "pwrite64", "readv", "writev", "connect", "sendto",
    "recvfrom", "sendmsg", "recvmsg", "recvmmsg", "sendmmsg",
)  # fmt: skip
POLL_CALLS = _nrs(
    "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"
)
ACCEPT_CALLS = _nrs("accept", "accept4")
SLEEP_CALLS = _nrs("nanosleep", "clock_nanosleep", "wait4", "waitid")


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

    return s.map(conv).astype("float64")


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
    df: pd.DataFrame, leaf_kind: pd.Series, has_py: pd.Series, gil: tuple[int, int] | None
) -> pd.Series:
    """The wait class of each row, as if the thread were off-CPU (see module doc)."""
    state = df["state"].astype(str)
    sc = pd.to_numeric(df.get("syscall"), errors="coerce")
    addr = _hex_to_float(df.get("arg0", pd.Series("", index=df.index)))
    futex = sc.isin(FUTEX)
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
        futex & has_py,
        futex,
        sc.isin(ACCEPT_CALLS),
        sc.isin(IO_CALLS) & (lk == "idle"),
        sc.isin(IO_CALLS),
        sc.isin(POLL_CALLS) & (lk == "io"),
        sc.isin(POLL_CALLS),
        sc.isin(SLEEP_CALLS),
        state == "R",
    ]
    choices = ["other", "io", "gil", "idle", "io", "lock", "idle", "idle", "idle", "io", "io",
               "idle", "idle", "runnable"]  # fmt: skip
    return pd.Series(np.select(conds, choices, default="other"), index=df.index)


def thread_time(data: BundleData, frames: FrameRules) -> ThreadTime | None:
    df = data.threads
    if df is None or df.empty:
        return None
    df = df.sort_values(["tid", "t"]).reset_index(drop=True)
    stack_ids = join_python_stacks(df, data)
    df["stack_id"] = stack_ids
    leaves = {sid: python_leaf(st) for sid, st in data.py_stacks.items()}
    df["py_leaf"] = df["stack_id"].map(leaves).astype(object).fillna("")
    leaf_kind = df["py_leaf"].map(lambda f: frames.wait_kind(f) if f else None)
    py_tids = set(data.py_names) if data.py_names else set()
    if data.py_intervals is not None:
        py_tids |= set(data.py_intervals["tid"].unique().tolist())
    has_py = df["tid"].isin(py_tids)
    gr = gil_range(data.system)
    df["wait_class"] = classify_waits(df, leaf_kind, has_py, gr)

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
    # counters and ticks are read a few microseconds apart: keep the sum within dt
    total = on + rq
    scale = np.where(total > iv["dt"], iv["dt"] / total.replace(0, np.nan), 1.0)
    scale = np.nan_to_num(scale, nan=1.0)
    iv["running"] = on * scale
    iv["runnable"] = rq * scale
    iv["slices"] = d_sl[valid].clip(lower=0).fillna(0.0)
    off = (iv["dt"] - iv["running"] - iv["runnable"]).clip(lower=0)
    end_cls = iv["wait_class"]
    start_cls = prev_class[valid].fillna("other")
    off_cls = np.where(
        end_cls == "runnable", np.where(start_cls == "runnable", "other", start_cls), end_cls
    )
    iv["off_class"] = off_cls
    for s in ("gil", "lock", "io", "idle", "other"):
        iv[s] = np.where(iv["off_class"] == s, off, 0.0)
    iv["futex_addr"] = _futex_addr_at(df, valid).to_numpy()
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


def _futex_addr_at(df: pd.DataFrame, valid: pd.Series) -> pd.Series:
    sc = pd.to_numeric(df.get("syscall"), errors="coerce")
    arg = df.get("arg0", pd.Series("", index=df.index)).astype(str)
    addr = arg.where(sc.isin(FUTEX), "")
    return addr[valid].reset_index(drop=True)


_DIGITS = re.compile(r"[\d_-]*\d[\d_-]*$")


def thread_role(name: str, comm: str, python: bool) -> str:
    """Group threads that do the same job: 'ThreadPoolExecutor-0_3' -> 'ThreadPoolExecutor-*'."""
    base = name if python and name else comm
    base = (base or "?").strip()
    stripped = _DIGITS.sub("", base).rstrip(" -_:.(") or base
    role = stripped + ("-*" if stripped != base else "")
    return role if python else f"{role} (native)"
