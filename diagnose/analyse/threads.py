"""Thread states: where each thread's wall time went, tick by tick.

Between two ticks of the /proc sampler a thread's time is split with the kernel's own
counters (schedstat): ``running`` = on-CPU time, ``runnable`` = time on a run queue waiting
for a core, and the rest, off-CPU, is put in the wait class observed at the tick (or at the
tick before, when the thread was runnable at the end):

- ``gil``: blocked in futex() on an address inside the interpreter's ``_PyRuntime``, where
  CPython keeps the GIL;
- ``lock``: any other futex wait of a Python thread whose leaf frame is not a queue,
  condition or event wait (rules/frames.toml ``[waits]``), e.g. ``with MODEL_LOCK:``; and a
  futex wait of a native thread that perf saw waiting for a mutex; and a wait at a queue
  whose items peers hand back (a connection pool), by perf's trace and, past the trace's
  end, by the share of hand-backs it saw at that Python stack;
- ``io``: uninterruptible sleep (disk), socket/pipe/file reads and writes, or a wait whose
  leaf frame is in an HTTP/database client (not a futex wait under a socket module's
  frame: a socket read never waits there, so that frame is from before the thread moved on);
- ``idle``: sleeping, waiting for work (queue, condition, event, accept, epoll with no
  I/O frame), and the other futex waits of native threads (pools parked between jobs);
- ``other``: stopped, or blocked in a call we do not classify.

All of it, the native mutex waits included, is settled by :func:`thread_time` before any
metric is computed, so every metric is a share of the same totals.
"""

from __future__ import annotations

import fnmatch
import re

import numpy as np
import pandas as pd

from diagnose.analyse.arch import Syscalls
from diagnose.analyse.frames import (
    KERNEL,
    FrameRules,
    in_socket_module,
    is_native_frame,
    python_leaf,
    split_frame,
    user_leaf,
    waiting_caller,
)
from diagnose.analyse.joins import TextCodes, map_distinct, python_stack_at, select_text
from diagnose.analyse.load import BundleData
from diagnose.analyse.model import BUSY_STATES, STATES, Context, ThreadTime, ratio, rounded
from diagnose.formats.stacks import Stack

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
#: ... taking or handing over the GIL (the interpreter's side of a GIL wait)
GIL_FRAMES = (
    "take_gil",
    "drop_gil",
    "*PyEval_RestoreThread*",
    "*PyEval_AcquireThread*",
    "*PyEval_SaveThread*",
)
_MUTEX_RE = re.compile("|".join(fnmatch.translate(p) for p in MUTEX_FRAMES))
_COND_RE = re.compile("|".join(fnmatch.translate(p) for p in CONDITION_FRAMES))
_WAIT_RE = re.compile(
    "|".join(fnmatch.translate(p) for p in (*MUTEX_FRAMES, *CONDITION_FRAMES, *GIL_FRAMES))
)
_DIGITS = re.compile(r"[\d_-]*\d[\d_-]*$")
#: /proc rows accounted at once (whole threads): bounds the temporaries of a long capture
CHUNK_ROWS = 200_000


def column(df: pd.DataFrame, name: str, default: object = np.nan) -> pd.Series:
    """Column ``name`` of ``df``, or ``default`` in every row where the table lacks it."""
    return df[name] if name in df else pd.Series(default, index=df.index)


def text_column(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` as text, "" where empty: a CSV column with no value in any row is read
    as floats (NaN), which pandas will not fill with text."""
    return column(df, name, "").astype(object).fillna("").astype(str)


# --- the steps -----------------------------------------------------------------------------


def thread_states(ctx: Context) -> None:
    """Step: every thread's time by state, final (native mutex waits moved to lock)."""
    ctx.futex = futex_waits(ctx.data, ctx.frames)
    ctx.threads = thread_time(ctx.data, ctx.frames, ctx.futex)
    ctx.out.thread_time = ctx.threads
    if ctx.threads is not None:
        ctx.out.per_thread = ctx.threads.per_thread


def thread_metrics(ctx: Context) -> None:
    """Step: busy time and its shares, thread counts, CPU demand."""
    tt = ctx.threads
    if tt is None:
        return
    m = ctx.metrics
    iv, per, window = tt.intervals, tt.per_thread, tt.window
    m["window_s"] = rounded(window, 2)
    m["threads_total"] = len(per)
    sums = {s: float(iv[s].sum()) for s in STATES}
    total = sum(sums.values())
    busy = sum(sums[s] for s in BUSY_STATES)
    m["thread_time_s"] = rounded(total, 2)
    m["busy_time_s"] = rounded(busy, 2)
    for s in BUSY_STATES:
        m[f"busy_share_{s}"] = rounded(ratio(sums[s], busy), 4) if busy > 0 else 0.0
    m["idle_share"] = rounded(ratio(sums["idle"], total), 4) if total > 0 else None
    if "client" in iv:
        client = float(iv["client"].sum())
        m["idle_share_client"] = (
            rounded(ratio(client, sums["idle"]), 4) if sums["idle"] > 0 else 0.0
        )
    if "loop" in iv:
        m["busy_share_io_loop"] = rounded(ratio(float(iv["loop"].sum()), busy), 4) if busy else 0.0
    if window > 0:
        m["busy_threads_mean"] = rounded(busy / window, 3)
        m["running_threads_mean"] = rounded(sums["running"] / window, 3)
        m["cpu_demand_threads_mean"] = rounded((sums["running"] + sums["runnable"]) / window, 3)
        if m.get("cores_available"):
            m["runnable_per_core"] = rounded(m["cpu_demand_threads_mean"] / m["cores_available"], 3)
    m["runq_to_oncpu_ratio"] = (
        rounded(ratio(sums["runnable"], sums["running"]), 3) if sums["running"] > 0 else None
    )
    _thread_counts(ctx, per, window)
    _io_waits(ctx, iv, sums["io"])


def _io_waits(ctx: Context, iv: pd.DataFrame, io_total: float) -> None:
    """Where the I/O waits were: the code that asked for the most of them."""
    io = iv[iv["io"] > 0]
    if io_total <= 0 or io.empty or "wait_stack" not in io:
        return
    stacks = ctx.data.py_stacks
    callers = map_distinct(io["wait_stack"], lambda sid: waiting_caller(stacks.get(sid, ())))
    by_frame = io["io"].groupby(callers).sum().sort_values(ascending=False)
    top, secs = str(by_frame.index[0]), float(by_frame.iloc[0])
    m = ctx.metrics
    m["io_wait_top_frame"] = top or "no Python frame (a native thread)"
    m["io_wait_top_frame_share"] = rounded(ratio(secs, io_total), 3)


def _thread_counts(ctx: Context, per: pd.DataFrame, window: float) -> None:
    m, data = ctx.metrics, ctx.data
    busy_frac = (per["busy"] / per["total"].replace(0, np.nan)).fillna(0)
    per["busy_frac"] = busy_frac
    busy_threads = per[busy_frac >= 0.2]
    m["threads_busy"] = len(busy_threads)
    wants_cpu = ((per["running"] + per["runnable"]) / per["total"].replace(0, np.nan)).fillna(0)
    present = per["total"] >= 0.25 * window  # not a thread that lived for a moment
    m["cpu_bound_threads"] = int(((wants_cpu >= 0.8) & present).sum())
    if data.py_intervals is not None:
        m["threads_python"] = int(per["python"].sum())
        m["threads_native"] = int((~per["python"]).sum())
        m["app_threads_busy"] = int(busy_threads["python"].sum())
        m["native_threads_busy"] = int((~busy_threads["python"]).sum())
    elif not (data.bundle.manifest.target.is_python):
        # not a Python target: every thread is native, and that is a measurement
        m["threads_python"] = 0
        m["threads_native"] = len(per)
        m["app_threads_busy"] = 0
        m["native_threads_busy"] = len(busy_threads)
    app = m.get("app_threads_busy")
    if app and m.get("native_threads_busy") is not None:
        m["intra_op_threads_per_app"] = rounded(1 + m["native_threads_busy"] / app, 1)


def thread_timeline(ctx: Context) -> None:
    """Step: each thread's dominant state in time bins, for the timeline chart."""
    if ctx.threads is not None:
        ctx.out.series["timeline"] = timeline(ctx.threads.intervals, ctx.threads.per_thread)


# --- accounting ----------------------------------------------------------------------------


def thread_time(
    data: BundleData, frames: FrameRules, futex: pd.DataFrame | None = None
) -> ThreadTime | None:
    """Every thread's time per /proc tick interval and state (see the module doc).

    ``futex``: perf's classified futex waits (:func:`futex_waits`), which move native
    threads' mutex waits from idle to lock."""
    threads = data.threads
    if threads is None or threads.empty:
        return None
    leaves = {sid: python_leaf(st) for sid, st in data.py_stacks.items()}
    # the wait kind of the stack: "idle" | "lock" | "io" | "client", "" for none, None: no stack
    kinds = {
        sid: stack_wait_kind(frames, st) if leaves[sid] else None
        for sid, st in data.py_stacks.items()
    }
    calls = Syscalls.of(data.machine)
    # a few threads at a time: every step below is per thread, and the temporaries of a
    # long capture's whole table (hundreds of MB) need not be alive at once
    tids = np.sort(threads["tid"].unique())
    parts = max(1, -(-len(threads) // CHUNK_ROWS))
    ivs, pers = [], []
    moved = pooled = 0.0
    mutex = native_mutex_waits(futex, data.python_tids)
    mutexes = set(mutex["uaddr"].astype(str))
    pool = pool_waits(futex)
    shares = pool_share_by_stack(futex)
    for chunk in np.array_split(tids, min(parts, len(tids))):
        part = threads[threads["tid"].isin(chunk)] if parts > 1 else threads
        df = part.sort_values(["tid", "t"]).reset_index(drop=True)
        iv = _thread_intervals(df, data, frames, calls, leaves, kinds)
        if mutexes:
            native = set(chunk.tolist()) - data.python_tids
            moved += move_native_mutex_waits(iv, mutex[mutex["tid"].isin(chunk)], native, mutexes)
        for tid in sorted(set(pool["tid"].tolist()) & set(chunk.tolist())):
            pooled += _move_overlap(iv, tid, pool[pool["tid"] == tid])
        pooled += move_untraced_pool_waits(iv, futex, shares)
        ivs.append(iv)
        pers.append(_per_thread(df, iv, data, data.python_tids))
    iv = pd.concat(ivs, ignore_index=True) if len(ivs) > 1 else ivs[0]
    per = pd.concat(pers, ignore_index=True) if len(pers) > 1 else pers[0]
    t = threads["t"]
    window = float(t.max() - t.min()) if len(threads) > 1 else 0.0
    return ThreadTime(iv, per, window, data.gil_range, moved, pooled)


def _thread_intervals(
    df: pd.DataFrame,
    data: BundleData,
    frames: FrameRules,
    calls: Syscalls,
    leaves: dict[int, str],
    kinds: dict[int, str | None],
) -> pd.DataFrame:
    """:func:`_intervals` of some threads' rows (sorted by thread and time), with the
    Python stack each row was in and the wait class it implies."""
    df["stack_id"] = python_stack_at(data.py_intervals, df["t"], df["tid"])
    df["py_leaf"] = map_distinct(df["stack_id"], lambda sid: leaves.get(sid, ""))
    stack_kind = pd.Series(
        map_distinct(df["stack_id"], lambda sid: kinds.get(sid) if sid in kinds else None),
        index=df.index,
    )
    # waiting on a connection it accepted is waiting on its own client, whatever the frame
    sock = text_column(df, "sock")
    accepted = sock.eq("in")
    df["client"] = ((stack_kind == "client") | accepted).to_numpy()
    # a loop free to take other work while a dependency it polls awaits a reply
    df["loop"] = sock.eq("loop").to_numpy()
    # waiting for one's own clients is idle (client-bound), never a dependency
    leaf_kind = stack_kind.where(stack_kind != "client", "idle")
    has_py = df["tid"].isin(data.python_tids)
    # a socket read never waits in futex(): where the kernel says futex, that frame is a
    # sample from before the thread moved on (py-spy samples slower than /proc ticks)
    in_socket = pd.Series(map_distinct(df["py_leaf"], in_socket_module), index=df.index)
    leaf_kind = leaf_kind.where(~(in_socket.astype(bool) & leaf_kind.eq("io")), "stale_io")
    df["wait_class"] = classify_waits(df, leaf_kind, has_py, data.gil_range, calls)
    return _intervals(df, calls)


def _intervals(df: pd.DataFrame, calls: Syscalls) -> pd.DataFrame:
    """One row per thread per tick interval: seconds running, runnable and per wait class,
    the futex address and the Python leaf frame the blocked time was spent at."""
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
    back = TextCodes(end_cls).eq("runnable")
    # the off-CPU time's class: the interval's end's, or its start's when the thread was
    # runnable again at the end (rows keep the string objects they came with)
    off_class = TextCodes(
        start_cls.where(~TextCodes(start_cls).eq("runnable"), "other").where(back, end_cls)
    )
    for s in ("gil", "lock", "io", "idle", "other"):
        iv[s] = np.where(off_class.eq(s), off, 0.0)
    # where the off-CPU time was spent: the tick whose wait class it took
    addr = _futex_addr(df, calls)
    iv["futex_addr"] = addr.groupby(df["tid"]).shift(1)[valid].fillna("").where(back, addr[valid])
    iv["wait_leaf"] = g["py_leaf"].shift(1)[valid].fillna("").where(back, iv["py_leaf"])
    iv["wait_t"] = np.where(back, iv["t"] - iv["dt"], iv["t"])
    from_start = back
    # the off-CPU seconds of a flagged wait, from the tick whose class they took
    for flag, cls in (("client", "idle"), ("loop", "io")):
        if flag in df:
            was = np.where(
                from_start,
                g[flag].shift(1)[valid].fillna(False).astype(bool),
                df.loc[valid, flag].to_numpy(dtype=bool),
            )
            iv[flag] = np.where(was, iv[cls], 0.0)
    iv["wait_stack"] = np.where(
        from_start,
        g["stack_id"].shift(1)[valid].fillna(-1).astype("int64"),
        iv["stack_id"].fillna(-1).astype("int64").to_numpy(),
    )
    return iv.reset_index(drop=True)


def _per_thread(
    df: pd.DataFrame, iv: pd.DataFrame, data: BundleData, py_tids: set[int]
) -> pd.DataFrame:
    per = iv.groupby("tid")[list(STATES)].sum()
    per["total"] = per[list(STATES)].sum(axis=1)
    per["busy"] = per[list(BUSY_STATES)].sum(axis=1)
    firsts = [c for c in ("t", "comm") if c in df]  # not every column: a copy of each
    first = df.groupby("tid")[firsts].first()
    last = df.groupby("tid")[["t"]].last()
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
    return per.reset_index()


def stack_wait_kind(frames: FrameRules, stack: Stack) -> str:
    """What a thread blocked in ``stack`` waits for: its leaf-most Python frame's wait kind
    ("idle" | "lock" | "io", "" for none), except that a socket wait on behalf of a server's
    own code (``[waits] client``: reading the next request on a kept-alive connection,
    writing a response the client reads slowly) is "client": idle, bound by the clients,
    not a dependency."""
    kind = frames.wait_kind(python_leaf(stack)) or ""
    if kind in ("", "io") and frames.serves_client(stack):
        return "client"
    return kind


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
    state = TextCodes(df["state"])
    sc = pd.to_numeric(column(df, "syscall"), errors="coerce")
    addr = _hex_to_float(column(df, "arg0", ""))
    futex = sc.isin(calls.futex)
    in_gil = pd.Series(False, index=df.index)
    if gil is not None:
        in_gil = futex & (addr >= gil[0]) & (addr < gil[1])
    lk = TextCodes(leaf_kind)
    idle, io = lk.eq("idle"), lk.eq("io") | lk.eq("stale_io")
    stale = lk.eq("stale_io")  # an I/O frame the kernel contradicts (a futex wait)
    # the kernel's word on a socket wait (collect/sockwait.py) outranks the frame's name
    sock = TextCodes(text_column(df, "sock"))
    on_socket = sc.isin(calls.io) | sc.isin(calls.poll)
    conds = [
        state.eq("T", "t"),
        state.eq("D"),
        in_gil,
        futex & idle,
        futex & stale,
        futex & io,
        futex & has_py & leaf_kind.notna(),
        futex & has_py,
        futex,
        sc.isin(calls.accept),
        on_socket & sock.eq("out", "loop"),
        on_socket & sock.eq("in"),
        sc.isin(calls.io) & idle,
        sc.isin(calls.io),
        sc.isin(calls.poll) & io,
        sc.isin(calls.poll),
        sc.isin(calls.sleep),
        state.eq("R"),
    ]
    choices = ["other", "io", "gil", "idle", "other", "io", "lock", "other", "idle", "idle", "io",
               "idle", "idle", "io", "io", "idle", "idle", "runnable"]  # fmt: skip
    return select_text(conds, choices, "other", df.index)


def _hex_to_float(s: pd.Series) -> pd.Series:
    """'0x55d..' -> float (exact below 2**53, which user-space addresses are)."""

    def conv(v: object) -> float:
        if isinstance(v, str) and v.startswith("0x"):
            try:
                return float(int(v, 16))
            except ValueError:
                return np.nan
        return np.nan

    return pd.Series(map_distinct(s, conv), index=s.index, dtype="float64")


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
    sc = pd.to_numeric(column(df, "syscall"), errors="coerce")
    arg = column(df, "arg0", "").astype(str)
    return arg.where(sc.isin(calls.futex), "")


def thread_role(name: str, comm: str, python: bool) -> str:
    """Group threads that do the same job: 'ThreadPoolExecutor-0_3' -> 'ThreadPoolExecutor-*'."""
    base = name if python and name else comm
    base = (base or "?").strip()
    stripped = _DIGITS.sub("", base).rstrip(" -_:.(") or base
    role = stripped + ("-*" if stripped != base else "")
    return role if python else f"{role} (native)"


# --- perf's futex waits --------------------------------------------------------------------


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


def work_leaf(stack: Stack) -> str:
    """The leaf-most frame outside the kernel and outside lock, condition and GIL waits: the
    code a thread on the CPU was running, where its sample fell in a wait it was entering or
    leaving (a GIL handed over thousands of times a second burns CPU in the futex calls)."""
    for f in reversed(stack):
        if not f.endswith(f"({KERNEL})") and not _WAIT_RE.match(f.rsplit(" (", 1)[0]):
            return f
    return user_leaf(stack)


def futex_waits(data: BundleData, frames: FrameRules) -> pd.DataFrame | None:
    """perf's futex waits that ended, each with what it waited for (``kind``): the GIL (an
    address inside ``_PyRuntime``); for Python threads a lock, a condition (waiting for
    work: the leaf frame is a queue or event wait) or I/O, by their leaf Python frame; for
    native threads a lock (a mutex path) or a condition, by their native leaf frame."""
    fx = data.sched_futex
    if fx is None:
        return None
    fx = fx[fx["dur"].notna()].copy()
    if fx.empty:
        return fx
    fx["uaddr"] = fx["uaddr"].astype(str)
    fx["waker"] = pd.to_numeric(column(fx, "waker"), errors="coerce")
    fx["wake_t"] = pd.to_numeric(column(fx, "wake_t"), errors="coerce")
    addr = map_distinct(fx["uaddr"], lambda s: int(s, 16) if s.startswith("0x") else -1)
    mid = (fx["t"] + fx["dur"] / 2).to_numpy()
    py_ids = python_stack_at(data.py_intervals, mid, fx["tid"].to_numpy())
    # leaves and kinds are computed once per distinct stack and key, not once per wait
    fx["py_leaf"] = map_distinct(
        py_ids, lambda i: python_leaf(data.py_stacks.get(int(i), ())) if i >= 0 else ""
    )
    stacks = data.sched_stacks
    fx["native"] = map_distinct(
        fx["stack_id"], lambda s: user_leaf(stacks.get(int(s), ())) if s >= 0 else ""
    )
    py_tids = data.python_tids
    gil = data.gil_range
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
    fx["py_sid"] = py_ids
    machinery = {
        int(sid)
        for sid in set(py_ids.tolist())
        if sid >= 0 and _waits_in_machinery(frames, data.py_stacks.get(int(sid), ()))
    }
    _peer_handbacks(fx, machinery)
    return fx.drop(columns=["_addr", "_op"])


def _waits_in_machinery(frames: FrameRules, stack: Stack) -> bool:
    """Is the code that asked for this wait (the leaf-most Python frame outside threading
    and queue) the serving machinery's, a thread pool's worker loop taking its next job?"""
    for frame in reversed(stack):
        if is_native_frame(frame) or split_frame(frame)[1].endswith(("threading.py", "queue.py")):
            continue
        return frames.is_serving(frame)
    return False


def _peer_handbacks(fx: pd.DataFrame, machinery: set[int]) -> None:
    """A wait for an item (``condition``) that a thread waiting at the same Python stack
    ended is a wait for a resource its peers take and give back (a connection pool made of
    a queue): ``pool``, counted as lock contention. Work handed over by a producer, which
    never waits there itself, stays a wait for work, and so does a wait the serving
    machinery asked for (``machinery``: a thread pool's workers waiting for their next job
    wake each other as they take jobs). A wait that timed out was handed nothing: its
    wakeup is the timer's, credited to whichever thread the CPU was running."""
    cond = TextCodes(fx["kind"]).eq("condition") & (fx["py_sid"] >= 0)
    if machinery:
        cond &= ~fx["py_sid"].isin(machinery).to_numpy()
    if "ret" in fx:
        cond &= (pd.to_numeric(fx["ret"], errors="coerce") == 0).to_numpy()
    if not cond.any():
        return
    tids, sids = fx.loc[cond, "tid"].astype(int), fx.loc[cond, "py_sid"].astype(int)
    waited_at = set(zip(tids, sids, strict=True))
    waker = fx["waker"].fillna(-1).astype(int)
    peer = [
        c and (w, sid) in waited_at and w != tid
        for c, w, sid, tid in zip(
            cond.tolist(),
            waker.tolist(),
            fx["py_sid"].astype(int).tolist(),
            fx["tid"].astype(int).tolist(),
            strict=True,
        )
    ]
    fx.loc[np.array(peer, dtype=bool), "kind"] = "pool"


def native_mutex_waits(futex: pd.DataFrame | None, python_tids: set[int]) -> pd.DataFrame:
    """Of perf's classified futex waits (:func:`futex_waits`), the mutex waits of threads
    without Python frames (empty without perf's futex waits)."""
    if futex is None or futex.empty:
        return pd.DataFrame(columns=["t", "tid", "uaddr", "dur"])
    return futex[TextCodes(futex["kind"]).eq("lock") & ~futex["tid"].isin(python_tids)]


def pool_waits(futex: pd.DataFrame | None) -> pd.DataFrame:
    """Of perf's classified futex waits, those for a resource peers hand back (``pool``)."""
    if futex is None or futex.empty:
        return pd.DataFrame(columns=["t", "tid", "uaddr", "dur"])
    return futex[TextCodes(futex["kind"]).eq("pool")]


#: waits perf saw at a Python stack before its hand-back share there stands for the stack
MIN_TRACED_WAITS = 5


def pool_share_by_stack(futex: pd.DataFrame | None) -> dict[int, float]:
    """Per Python stack (``py_sid``), the share of the traced wait time there that peers
    handed back (``pool``) against waits for work (``condition``), for stacks perf saw
    waiting at least MIN_TRACED_WAITS times with some hand-back."""
    if futex is None or futex.empty or "py_sid" not in futex:
        return {}
    kind = TextCodes(futex["kind"])
    fx = futex[(kind.eq("pool") | kind.eq("condition")) & (futex["py_sid"] >= 0)]
    if fx.empty:
        return {}
    dur = fx["dur"].astype(float)
    pooled = dur.where(TextCodes(fx["kind"]).eq("pool"), 0.0)
    g = pd.DataFrame({"sid": fx["py_sid"].astype(int), "dur": dur, "pool": pooled})
    agg = g.groupby("sid").agg(n=("dur", "size"), dur=("dur", "sum"), pool=("pool", "sum"))
    agg = agg[(agg["n"] >= MIN_TRACED_WAITS) & (agg["pool"] > 0) & (agg["dur"] > 0)]
    shares = (agg["pool"] / agg["dur"]).tolist()
    return dict(zip(agg.index.astype(int).tolist(), shares, strict=True))


def move_untraced_pool_waits(
    iv: pd.DataFrame, futex: pd.DataFrame | None, share: dict[int, float]
) -> float:
    """Where perf's trace ended before the window did (it stops at its event budget), a
    wait at a Python stack whose traced waits peers handed back is the same wait: that
    stack's share of hand-backs (``share``, :func:`pool_share_by_stack`) moves the idle
    time outside the trace to lock. Returns the seconds moved."""
    if not share or futex is None:
        return 0.0
    start = float(futex["t"].min())
    end = float((futex["t"] + futex["dur"]).max())
    b = iv["t"].to_numpy(dtype=float)
    a = b - iv["dt"].to_numpy(dtype=float)
    covered = np.clip(np.minimum(b, end) - np.maximum(a, start), 0.0, None)
    untraced = np.clip(1.0 - covered / np.maximum(b - a, 1e-9), 0.0, 1.0)
    frac = iv["wait_stack"].map(share).fillna(0.0).to_numpy(dtype=float)
    idle = iv["idle"].to_numpy(dtype=float)
    shift = idle * untraced * frac
    iv["idle"] = idle - shift
    iv["lock"] = iv["lock"].to_numpy(dtype=float) + shift
    return float(shift.sum())


def move_native_mutex_waits(
    iv: pd.DataFrame, mtx: pd.DataFrame, native_tids: set[int], mutexes: set[str]
) -> float:
    """Threads without Python frames (``native_tids``): mutex waits are lock time, not
    idle. Returns the seconds moved.

    Two ways, both measured: a /proc tick that saw the thread blocked in futex() on an
    address perf found to be a mutex (``mutexes``: the addresses of every such wait of the
    capture, its waiters' native stacks in __lll_lock_wait, ...) moves that interval's
    blocked time to lock; and where /proc saw no address, the time perf saw it in such a
    wait (``mtx``: those of ``iv``'s threads, :func:`native_mutex_waits`) within the
    interval."""
    at_mutex = iv["tid"].isin(native_tids) & (iv["idle"] > 0) & iv["futex_addr"].isin(mutexes)
    moved = float(iv.loc[at_mutex, "idle"].sum())
    iv.loc[at_mutex, "lock"] += iv.loc[at_mutex, "idle"]
    iv.loc[at_mutex, "idle"] = 0.0
    for tid in sorted(mtx["tid"].unique().tolist()):
        moved += _move_overlap(iv, tid, mtx[mtx["tid"] == tid])
    return moved


def _move_overlap(iv: pd.DataFrame, tid: int, waits: pd.DataFrame) -> float:
    """Move idle time of ``tid``'s intervals that overlaps its mutex ``waits`` to lock."""
    s = waits["t"].to_numpy(dtype=float)
    e = s + waits["dur"].to_numpy(dtype=float)
    order = np.argsort(s)
    s, e = s[order], e[order]
    t, dt = iv["t"].to_numpy(dtype=float), iv["dt"].to_numpy(dtype=float)
    idle, lock = iv["idle"].to_numpy(dtype=float).copy(), iv["lock"].to_numpy(dtype=float).copy()
    moved = 0.0
    for i in np.flatnonzero(((iv["tid"] == tid) & (iv["idle"] > 0)).to_numpy()):
        b = float(t[i])
        a0 = b - float(dt[i])
        lo, hi = int(np.searchsorted(e, a0)), int(np.searchsorted(s, b))
        if hi <= lo:
            continue
        overlap = float(np.clip(np.minimum(e[lo:hi], b) - np.maximum(s[lo:hi], a0), 0, None).sum())
        shift = min(overlap, float(idle[i]))
        if shift > 0:
            idle[i] -= shift
            lock[i] += shift
            moved += shift
    iv["idle"], iv["lock"] = idle, lock
    return moved


# --- the timeline chart --------------------------------------------------------------------


def timeline(
    iv: pd.DataFrame, per: pd.DataFrame, max_bins: int = 300, max_threads: int = 64
) -> dict[str, object]:
    """Per-thread dominant state in time bins, for the thread-state timeline chart."""
    if iv.empty:
        return {}
    # bins of consecutive ticks (one tick per bin up to max_bins ticks): binning by time
    # left bins empty wherever a tick came late and the next one early
    ticks = np.sort(iv["t"].unique())
    per_bin = -(-len(ticks) // max_bins)
    nb = -(-len(ticks) // per_bin)
    tick_bin = {t: i // per_bin for i, t in enumerate(ticks.tolist())}
    centres = [float(ticks[i * per_bin : (i + 1) * per_bin].mean()) for i in range(nb)]
    order = per.sort_values(["busy", "tid"], ascending=[False, True]).head(max_threads)
    tids = order["tid"].tolist()
    d = iv[iv["tid"].isin(tids)].copy()
    d["bin"] = map_distinct(d["t"], tick_bin.__getitem__).astype(int)
    sums = d.groupby(["tid", "bin"])[list(STATES)].sum()
    dom = sums.to_numpy().argmax(axis=1)
    grid = np.full((len(tids), nb), -1, dtype=int)
    row = {tid: i for i, tid in enumerate(tids)}
    for (tid, b), code in zip(sums.index, dom, strict=True):
        grid[row[tid], b] = int(code)
    labels = []
    for _, r in order.iterrows():
        name = r["name"] or r["comm"]
        labels.append(f"{name} ({int(r['tid'])})")
    return {
        "states": list(STATES),
        "t": [round(c, 3) for c in centres],
        "threads": labels,
        "tids": [int(t) for t in tids],
        "z": grid.tolist(),
        "omitted_threads": max(0, len(per) - len(tids)),
    }
