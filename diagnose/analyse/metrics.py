"""From a bundle to a flat set of named metrics, plus the tables the report draws.

Each metric is registered in :mod:`diagnose.analyse.registry` (name, unit, sources, how it
is computed). ``None`` means *not measured* (a collector was missing); a measured absence
is 0 or "" (no lock was contended: ``lock_top_waiters = 0``).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from diagnose.analyse.frames import FrameRules, is_native_frame, split_frame
from diagnose.analyse.load import BundleData, map_distinct
from diagnose.analyse.registry import METRICS, metric
from diagnose.analyse.threads import BUSY_STATES, STATES, ThreadTime, thread_time

Stack = tuple[str, ...]

#: on-CPU categories only native frames can reveal: without perf they are not measured
_NATIVE_CATEGORIES = ("compute", "memory", "allocator")

# --- registrations ---------------------------------------------------------------------
metric("window_s", "s", "proc", "Length of the analysed window (first to last /proc tick).")
metric("threads_total", "threads", "proc", "Distinct threads seen during the window.")
metric("threads_python", "threads", "proc,pyspy", "Threads with a Python stack (py-spy saw them).")
metric(
    "threads_native",
    "threads",
    "proc,pyspy",
    "Threads without a Python stack: native pools (OpenMP, BLAS, onnxruntime, torch) and helpers.",
)
metric(
    "threads_busy",
    "threads",
    "proc",
    "Threads busy (running, runnable, or waiting on a lock, the GIL or I/O) for at least 20% of the time they were seen.",
)
metric(
    "cpu_bound_threads",
    "threads",
    "proc",
    "Threads that wanted a CPU (running or runnable) at least 80% of the time they were seen (and were seen for a quarter of the window or more): threads that never block. More of them than cores oversubscribes the cores whatever else runs on the host.",
)
metric(
    "app_threads_busy",
    "threads",
    "proc,pyspy",
    "Busy threads that run Python code (request handlers, workers).",
)
metric(
    "native_threads_busy",
    "threads",
    "proc,pyspy",
    "Busy threads without Python frames (intra-op pools of BLAS/OpenMP/onnxruntime/torch).",
)
metric(
    "process_cpu_cores",
    "cores",
    "proc",
    "CPU time used by the target per second of wall time (utime+stime of /proc/PID/stat).",
)
metric("process_cpu_share", "share", "proc,system", "process_cpu_cores / cores_available.")
metric(
    "host_cpu_util",
    "share",
    "proc",
    "Mean utilisation of the CPUs the target may use, whoever used them (/proc/stat).",
)
metric(
    "host_other_cpu_share",
    "share",
    "proc,system",
    "host_cpu_util - process_cpu_share: the share of the usable CPUs busy with work other than the target (diagnose's own collectors included).",
)
metric(
    "process_sys_share",
    "share",
    "proc",
    "System (kernel) CPU time / all CPU time of the target. Above ~0.1 the kernel is busy switching threads, spinning in sched_yield or handling futex calls for the target.",
)
metric(
    "process_share_of_cpu_used",
    "share",
    "proc,system",
    "process_cpu_share / host_cpu_util: of the CPU time used on the target's CPUs, the part the target used. Low while its threads wait for a core means other processes hold the cores.",
)
metric(
    "tool_cpu_cores",
    "cores",
    "proc",
    "CPU time diagnose itself and its helpers (py-spy, perf) used per second of the capture: what measuring cost the host.",
)
metric("tool_cpu_share", "share", "proc,system", "tool_cpu_cores / cores_available.")
metric(
    "host_foreign_cpu_share",
    "share",
    "proc,system",
    "host_other_cpu_share - tool_cpu_share: the share of the usable CPUs busy with processes other than the target and diagnose.",
)
metric("rss_mb", "MiB", "proc", "Resident memory of the target at the end of the window.")
metric(
    "rss_growth_mb_per_min",
    "MiB/min",
    "proc",
    "Slope of a least-squares line through RSS over the window.",
)
metric("minflt_per_s", "1/s", "proc", "Minor page faults of the process per second.")
metric(
    "majflt_per_s", "1/s", "proc", "Major page faults (read from disk) of the process per second."
)
metric("thread_time_s", "thread-s", "proc", "Sum over threads of the time each was observed.")
metric(
    "busy_time_s",
    "thread-s",
    "proc",
    "Sum over threads of running + runnable + gil + lock + io time.",
)
metric("busy_share_running", "share", "proc", "Running (on a CPU) time / busy time.")
metric(
    "busy_share_runnable",
    "share",
    "proc",
    "Runnable time (ready, waiting for a core; schedstat run_delay) / busy time.",
)
metric("busy_share_gil", "share", "proc,system", "Time blocked on the GIL / busy time.")
metric(
    "busy_share_lock",
    "share",
    "proc,pyspy",
    "Time blocked on locks, semaphores and pools / busy time.",
)
metric(
    "busy_share_io",
    "share",
    "proc",
    "Time blocked in I/O (disk, sockets, pipes, HTTP/DB clients) / busy time.",
)
metric("idle_share", "share", "proc", "Idle time (sleeping, waiting for work) / all thread time.")
metric(
    "busy_threads_mean",
    "threads",
    "proc",
    "Busy time / window: how many threads were busy on average (0.2 = one thread busy a fifth of the time).",
)
metric(
    "running_threads_mean",
    "threads",
    "proc",
    "Running time / window: the average number of the target's threads on a CPU.",
)
metric(
    "cpu_demand_threads_mean",
    "threads",
    "proc",
    "(Running + runnable time) / window: the average number of threads that wanted a CPU.",
)
metric(
    "runnable_per_core",
    "ratio",
    "proc,system",
    "cpu_demand_threads_mean / cores_available. Above 1 the target asks for more cores than it has.",
)
metric(
    "runq_to_oncpu_ratio",
    "ratio",
    "proc",
    "Runnable time / running time: how long threads wait for a core per second they run.",
)
metric(
    "runnable_threads_mean",
    "threads",
    "proc",
    "Mean over ticks of the number of the target's threads in state R (running or waiting for a core).",
)
metric(
    "runnable_threads_p95",
    "threads",
    "proc",
    "95th percentile over ticks of the number of threads in state R.",
)
metric(
    "ctx_switches_voluntary_per_s",
    "1/s",
    "proc",
    "Voluntary context switches of all threads per second (blocking).",
)
metric(
    "ctx_switches_involuntary_per_s",
    "1/s",
    "proc",
    "Involuntary context switches per second (preempted: time slice used up or a higher-priority task woke).",
)
metric("involuntary_switch_share", "share", "proc", "Involuntary / all context switches.")
metric(
    "migrations_per_s",
    "1/s",
    "proc",
    "Moves of the target's threads between CPUs per second (se.nr_migrations).",
)
metric("migrations_per_busy_thread_s", "1/s", "proc", "migrations_per_s / threads_busy.")
metric(
    "runq_delay_p50_ms",
    "ms",
    "proc",
    "Median run-queue delay per timeslice: per thread and tick interval, schedstat run_delay / timeslices, weighted by timeslices.",
)
metric(
    "runq_delay_p99_ms",
    "ms",
    "proc",
    "99th percentile of the same. perf's sched view (if recorded) gives the per-event distribution.",
)
metric(
    "cores_available",
    "cores",
    "system",
    "CPUs the target may really use: affinity and cpuset, capped by the cgroup CPU quota.",
)
metric("logical_cpus", "CPUs", "system", "Logical CPUs of the host.")
metric("physical_cores", "cores", "system", "Physical cores of the host.")
metric(
    "cpu_quota_cores",
    "cores",
    "system",
    "cgroup CPU quota (cpu.max / cfs_quota_us), null when unlimited.",
)
metric("cpus_usable", "text", "system", "CPU list the target may run on, e.g. 0-7.", "text")
metric(
    "openmp_loaded",
    "bool",
    "system",
    "1 if an OpenMP runtime (libgomp, libiomp5, libomp) is loaded.",
)
metric("blas_library", "text", "system", "BLAS libraries loaded (OpenBLAS, MKL, BLIS).", "text")
metric(
    "ml_runtime",
    "text",
    "system",
    "Inference runtimes loaded (onnxruntime, libtorch, tensorflow, openvino).",
    "text",
)
metric(
    "pool_threads_env",
    "threads",
    "system",
    "Smallest of OMP/MKL/OPENBLAS/... _NUM_THREADS set in the target's environment; null if none is set (the libraries then default to one thread per visible CPU).",
)
metric(
    "pool_env_set",
    "bool",
    "system",
    "1 if any of OMP/MKL/OPENBLAS/... _NUM_THREADS is set in the target's environment, 0 if none is.",
)
metric(
    "pin_suggestion",
    "text",
    "system",
    "With 4 or more usable CPUs: a split that keeps the first eighth (at least one) for the web server and I/O threads, e.g. 'cores 1-7 for inference, 0 for the web server'.",
    "text",
)
metric(
    "intra_op_suggestion",
    "threads",
    "proc,system",
    "max(1, floor(cores_available / app_threads_busy)): intra-op threads per application thread that would fit the cores.",
)
metric(
    "intra_op_threads_per_app",
    "threads",
    "proc,pyspy",
    "1 + native_threads_busy / app_threads_busy: the threads each application thread fans out to (itself plus its share of the busy intra-op pools).",
)
metric(
    "oncpu_samples",
    "samples",
    "proc,pyspy",
    "On-CPU samples categorised: perf's samples; without perf, py-spy's samples weighted by the thread's on-CPU fraction at that moment (on-CPU seconds x py-spy rate).",
)
metric(
    "oncpu_source",
    "text",
    "proc,pyspy",
    "Where on-CPU stacks came from: 'perf+py-spy' (native kernels known) or 'py-spy' (Python frames only).",
    "text",
)
metric(
    "oncpu_native_share",
    "share",
    "proc,pyspy",
    "Share of on-CPU samples that had native frames (0 without perf).",
)
for _cat, _what in (
    ("preprocess", "preprocessing (decode, resize, tokenise, normalise, JSON parsing, pandas)"),
    ("serialisation", "serialising responses (JSON, pickle, protobuf)"),
    ("compute", "model compute kernels (GEMM, convolution, attention)"),
    ("memory", "memory-bound kernels (memcpy/memset, copies, transposes, casts, elementwise)"),
    ("allocator", "the allocator (malloc/free, page faults)"),
    ("model", "model calls whose kernel is unknown (no native stack)"),
    ("other", "everything else (request handling, business logic, interpreter)"),
):
    if _cat in _NATIVE_CATEGORIES:
        metric(
            f"oncpu_share_{_cat}",
            "share",
            "perf",
            f"Share of on-CPU samples in {_what}. Needs native stacks: null without perf.",
        )
    else:
        metric(f"oncpu_share_{_cat}", "share", "proc,pyspy", f"Share of on-CPU samples in {_what}.")
metric(
    "oncpu_share_inference",
    "share",
    "proc,pyspy",
    "oncpu_share_compute + oncpu_share_memory + oncpu_share_model: time inside the model.",
)
metric(
    "preprocess_top_function",
    "text",
    "proc,pyspy",
    "The leaf function with most preprocessing samples.",
    "text",
)
metric(
    "preprocess_threads",
    "threads",
    "proc,pyspy",
    "Threads with at least 10% of the preprocessing samples.",
)
metric(
    "preprocess_top_thread_share",
    "share",
    "proc,pyspy",
    "Share of preprocessing samples in the busiest preprocessing thread (1.0 = serial).",
)
metric(
    "preprocess_top_thread_busy",
    "share",
    "proc,pyspy",
    "How busy that thread was: its busy time / the time it was seen. Near 1 the stage is saturated and sets the throughput.",
)
metric(
    "compute_top_function",
    "text",
    "proc,pyspy",
    "The leaf function with most compute/memory/model samples.",
    "text",
)
metric(
    "oncpu_top_function",
    "text",
    "proc,pyspy",
    "The leaf function with most on-CPU samples.",
    "text",
)
metric(
    "lock_hotspots",
    "locks",
    "proc,pyspy",
    "Locks (futex addresses, or lock sites on Python 3.13+) that two or more threads waited on.",
)
metric(
    "lock_top_address",
    "text",
    "proc,pyspy",
    "Address of the lock threads waited on longest.",
    "text",
)
metric("lock_top_waiters", "threads", "proc,pyspy", "Distinct threads that waited on that lock.")
metric("lock_top_wait_s", "thread-s", "proc,pyspy", "Total time threads waited on that lock.")
metric("lock_top_share", "share", "proc,pyspy", "That wait time / busy time.")
metric(
    "lock_top_site",
    "text",
    "proc,pyspy",
    "Where the waiters wait: their most common leaf Python frame.",
    "text",
)
metric(
    "lock_top_holder_site",
    "text",
    "proc,pyspy",
    "Inferred: what the thread inside the locked region was running while others waited (the most common stack of a running thread passing through the waiters' function).",
    "text",
)
metric(
    "lock_waiters_max",
    "threads",
    "proc,pyspy",
    "Most threads seen waiting on that lock at one tick.",
)
metric(
    "gil_waiters_mean",
    "threads",
    "proc,system",
    "Average number of threads blocked on the GIL at a tick.",
)
metric("gil_waiters_max", "threads", "proc,system", "Most threads blocked on the GIL at one tick.")
metric(
    "gil_held_samples",
    "samples",
    "gil",
    "py-spy --gil samples: ticks at which some thread held the GIL.",
)
metric(
    "gil_holder_top",
    "text",
    "gil",
    "The thread that held the GIL most often (py-spy --gil).",
    "text",
)
metric("gil_holder_top_share", "share", "gil", "Its share of the GIL-holding samples.")
metric(
    "gil_holder_top_site",
    "text",
    "gil",
    "The leaf Python frame most often holding the GIL.",
    "text",
)
metric(
    "gil_holder_preprocess_share",
    "share",
    "gil",
    "Share of the GIL-holding samples whose stack is preprocessing (frames.toml): the GIL "
    "waits that a preprocessing stage causes.",
)
metric("python_version", "text", "system", "Python version of the target (major.minor).", "text")

_POOL_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
             "TORCH_NUM_THREADS", "ORT_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")  # fmt: skip


@dataclass
class Analysis:
    metrics: dict[str, Any]
    unmeasured: dict[str, str]
    per_thread: pd.DataFrame | None
    thread_time: ThreadTime | None
    oncpu: dict[str, Any] = field(default_factory=dict)
    locks: list[dict[str, Any]] = field(default_factory=list)
    flames: dict[str, list[tuple[Stack, float]]] = field(default_factory=dict)
    series: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def _r(x: float | None, nd: int = 4) -> float | None:
    if x is None:
        return None
    try:
        if math.isnan(x) or math.isinf(x):
            return None
    except TypeError:
        return None
    return round(float(x), nd)


def _ratio(a: float, b: float) -> float | None:
    return None if b <= 0 else a / b


def _cpu_list(cpus: list[int]) -> str:
    if not cpus:
        return ""
    out: list[str] = []
    start = prev = cpus[0]
    for c in [*cpus[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
        if c is not None:
            start = prev = c
    return ",".join(out)


# --- groups ----------------------------------------------------------------------------


def _system_metrics(data: BundleData, m: dict[str, Any]) -> None:
    s = data.system
    if not s:
        return
    cap = s.get("capacity") or {}
    cpu = s.get("cpu") or {}
    m["cores_available"] = cap.get("cores_available")
    m["logical_cpus"] = cpu.get("logical_cpus")
    m["physical_cores"] = cpu.get("physical_cores")
    m["cpu_quota_cores"] = cap.get("quota_cores")
    usable = sorted(cap.get("usable_cpus") or [])
    m["cpus_usable"] = _cpu_list(usable)
    if len(usable) >= 4:
        reserve = max(1, len(usable) // 8)
        m["pin_suggestion"] = (
            f"cores {_cpu_list(usable[reserve:])} for inference, {_cpu_list(usable[:reserve])} for the web server"
        )
    else:
        m["pin_suggestion"] = (
            f"with only {len(usable)} usable CPUs there is nothing to split: keep other work off cores {_cpu_list(usable)}"
        )
    libs = s.get("libraries") or {}
    m["openmp_loaded"] = 1 if libs.get("openmp") else 0
    m["blas_library"] = ", ".join(libs.get("blas", []))
    m["ml_runtime"] = ", ".join(
        k for k in ("onnxruntime", "libtorch", "tensorflow", "openvino") if libs.get(k)
    )
    env = s.get("env") or {}
    vals = []
    for k in _POOL_ENV:
        try:
            v = int(str(env.get(k, "")).split(",")[0])
            if v > 0:
                vals.append(v)
        except ValueError:
            pass
    m["pool_threads_env"] = min(vals) if vals else None
    m["pool_env_set"] = 1 if vals else 0
    m["python_version"] = (s.get("python") or {}).get("version") or ""


def _process_metrics(data: BundleData, m: dict[str, Any], series: dict[str, Any]) -> None:
    p = data.process
    if p is None or len(p) < 2:
        return
    p = p.sort_values("t")
    span = float(p["t"].iloc[-1] - p["t"].iloc[0])
    if span <= 0:
        return
    for col in ("utime", "stime", "rss_bytes", "minflt", "majflt", "threads", "sys_running"):
        if col in p:
            p[col] = pd.to_numeric(p[col], errors="coerce")
    cpu = (p["utime"] + p["stime"]).to_numpy()
    m["process_cpu_cores"] = _r((cpu[-1] - cpu[0]) / span, 3)
    if cpu[-1] - cpu[0] > 0:
        m["process_sys_share"] = _r(
            (p["stime"].iloc[-1] - p["stime"].iloc[0]) / (cpu[-1] - cpu[0]), 3
        )
    if "tool_cpu_s" in p:
        tool = pd.to_numeric(p["tool_cpu_s"], errors="coerce").dropna()
        if len(tool) >= 2:
            m["tool_cpu_cores"] = _r(max(0.0, float(tool.iloc[-1] - tool.iloc[0])) / span, 3)
    if m.get("cores_available") and m["process_cpu_cores"] is not None:
        m["process_cpu_share"] = _r(m["process_cpu_cores"] / m["cores_available"], 3)
    rss = p["rss_bytes"].to_numpy() / (1024 * 1024)
    m["rss_mb"] = _r(rss[-1], 1)
    t = p["t"].to_numpy()
    if len(t) >= 3 and np.ptp(t) > 0:
        slope = np.polyfit(t - t[0], rss, 1)[0]
        m["rss_growth_mb_per_min"] = _r(slope * 60, 2)
    m["minflt_per_s"] = _r((p["minflt"].iloc[-1] - p["minflt"].iloc[0]) / span, 1)
    m["majflt_per_s"] = _r((p["majflt"].iloc[-1] - p["majflt"].iloc[0]) / span, 2)
    # time series for charts: CPU cores used per second by the process
    series["process"] = {
        "t": [round(x, 3) for x in t.tolist()],
        "rss_mb": [round(x, 1) for x in rss.tolist()],
        "threads": p["threads"].fillna(0).astype(int).tolist(),
        "sys_running": p["sys_running"].fillna(0).tolist() if "sys_running" in p else [],
    }


def _cpu_metrics(data: BundleData, m: dict[str, Any], series: dict[str, Any]) -> None:
    c = data.cpus
    if c is None or c.empty:
        return
    usable = set(
        (data.system.get("capacity") or {}).get("usable_cpus") or c["cpu"].unique().tolist()
    )
    c = c.sort_values(["cpu", "t"])
    g = c.groupby("cpu")
    d_busy = g["busy_jiffies"].diff()
    d_total = g["total_jiffies"].diff()
    util = (d_busy / d_total.replace(0, np.nan)).clip(0, 1)
    c = c.assign(util=util)
    tot = g["total_jiffies"].agg(lambda s: s.iloc[-1] - s.iloc[0])
    busy = g["busy_jiffies"].agg(lambda s: s.iloc[-1] - s.iloc[0])
    per_cpu = (busy / tot.replace(0, np.nan)).fillna(0)
    sel = [cpu for cpu in per_cpu.index if cpu in usable]
    if sel:
        m["host_cpu_util"] = _r(float(per_cpu.loc[sel].mean()), 3)
        cores = m.get("cores_available")
        if m.get("tool_cpu_cores") is not None and cores:
            m["tool_cpu_share"] = _r(m["tool_cpu_cores"] / cores, 3)
        if m.get("process_cpu_share") is not None:
            other = max(0.0, m["host_cpu_util"] - m["process_cpu_share"])
            m["host_other_cpu_share"] = _r(other, 3)
            if m["host_cpu_util"] > 0:
                m["process_share_of_cpu_used"] = _r(
                    min(1.0, m["process_cpu_share"] / m["host_cpu_util"]), 3
                )
            if m.get("tool_cpu_share") is not None:
                m["host_foreign_cpu_share"] = _r(max(0.0, other - m["tool_cpu_share"]), 3)
    # per-core series, binned to at most 200 points
    ts = sorted(c["t"].unique().tolist())
    step = max(1, len(ts) // 200)
    keep = set(ts[::step])
    cc = c[c["t"].isin(keep) & c["util"].notna()]
    series["cpus"] = {
        str(int(cpu)): {"t": grp["t"].round(2).tolist(), "util": grp["util"].round(3).tolist()}
        for cpu, grp in cc.groupby("cpu")
    }
    series["cpu_mean"] = {str(int(k)): round(float(v), 3) for k, v in per_cpu.items()}


def _thread_metrics(
    tt: ThreadTime, data: BundleData, m: dict[str, Any], series: dict[str, Any]
) -> None:
    iv = tt.intervals
    per = tt.per_thread
    window = tt.window
    m["window_s"] = _r(window, 2)
    m["threads_total"] = len(per)
    sums = {s: float(iv[s].sum()) for s in STATES}
    total = sum(sums.values())
    busy = sum(sums[s] for s in BUSY_STATES)
    m["thread_time_s"] = _r(total, 2)
    m["busy_time_s"] = _r(busy, 2)
    for s in BUSY_STATES:
        m[f"busy_share_{s}"] = _r(_ratio(sums[s], busy), 4) if busy > 0 else 0.0
    m["idle_share"] = _r(_ratio(sums["idle"], total), 4) if total > 0 else None
    if window > 0:
        m["busy_threads_mean"] = _r(busy / window, 3)
        m["running_threads_mean"] = _r(sums["running"] / window, 3)
        m["cpu_demand_threads_mean"] = _r((sums["running"] + sums["runnable"]) / window, 3)
        if m.get("cores_available"):
            m["runnable_per_core"] = _r(m["cpu_demand_threads_mean"] / m["cores_available"], 3)
    m["runq_to_oncpu_ratio"] = (
        _r(_ratio(sums["runnable"], sums["running"]), 3) if sums["running"] > 0 else None
    )
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
    elif not (data.bundle.manifest.target.get("is_python")):
        # not a Python target: every thread is native, and that is a measurement
        m["threads_python"] = 0
        m["threads_native"] = len(per)
        m["app_threads_busy"] = 0
        m["native_threads_busy"] = len(busy_threads)
    cores = m.get("cores_available")
    app = m.get("app_threads_busy")
    if cores and app:
        m["intra_op_suggestion"] = max(1, int(cores // app))
    if app and m.get("native_threads_busy") is not None:
        m["intra_op_threads_per_app"] = _r(1 + m["native_threads_busy"] / app, 1)
    # R-state threads per tick
    df = data.threads
    assert df is not None
    r_counts = df[df["state"] == "R"].groupby("t").size().reindex(df["t"].unique(), fill_value=0)
    m["runnable_threads_mean"] = _r(float(r_counts.mean()), 2) if len(r_counts) else 0.0
    m["runnable_threads_p95"] = (
        _r(float(np.percentile(r_counts.to_numpy(), 95)), 1) if len(r_counts) else 0.0
    )
    # context switches and migrations (cumulative counters read every 5th tick)
    if window > 0:
        vol = float(per["vcsw"].fillna(0).sum())
        inv = float(per["ivcsw"].fillna(0).sum())
        if per["vcsw"].notna().any():
            m["ctx_switches_voluntary_per_s"] = _r(vol / window, 1)
            m["ctx_switches_involuntary_per_s"] = _r(inv / window, 1)
            m["involuntary_switch_share"] = _r(_ratio(inv, vol + inv), 3) if vol + inv > 0 else 0.0
        if per["migrations"].notna().any():
            mig = float(per["migrations"].fillna(0).sum())
            m["migrations_per_s"] = _r(mig / window, 2)
            if m["threads_busy"]:
                m["migrations_per_busy_thread_s"] = _r(mig / window / m["threads_busy"], 2)
    # run-queue delay per timeslice, per interval, weighted by timeslices
    sl = iv[(iv["slices"] > 0)]
    if not sl.empty:
        per_slice_ms = (sl["runnable"] / sl["slices"] * 1000).to_numpy()
        w = sl["slices"].to_numpy()
        m["runq_delay_p50_ms"] = _r(_weighted_quantile(per_slice_ms, w, 0.5), 3)
        m["runq_delay_p99_ms"] = _r(_weighted_quantile(per_slice_ms, w, 0.99), 3)
        hist, edges = _log_hist(per_slice_ms, w)
        series["runq_delay_hist"] = {"edges_ms": edges, "counts": hist, "source": "schedstat"}
    # GIL waiters per tick
    if tt.gil_range is not None:
        gil_rows = iv[iv["wait_class"] == "gil"]
        counts = gil_rows.groupby("t").size().reindex(iv["t"].unique(), fill_value=0)
        m["gil_waiters_mean"] = _r(float(counts.mean()), 3) if len(counts) else 0.0
        m["gil_waiters_max"] = int(counts.max()) if len(counts) else 0
    else:
        m["busy_share_gil"] = None if data.bundle.manifest.target.get("is_python") else 0.0
    # per-second switch series for charts
    series["switches"] = _switch_series(df)
    series["timeline"] = _timeline(iv, per)


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cw = np.cumsum(w)
    if cw[-1] <= 0:
        return float("nan")
    idx = int(np.searchsorted(cw, q * cw[-1]))
    return float(v[min(idx, len(v) - 1)])


def _log_hist(values: np.ndarray, weights: np.ndarray) -> tuple[list[float], list[float]]:
    edges = [0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    counts, _ = np.histogram(np.clip(values, 0, 999.9), bins=edges, weights=weights)
    return [round(c, 3) for c in counts.tolist()], edges


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
    d["bin"] = d["t"].floor() if hasattr(d["t"], "floor") else np.floor(d["t"])
    d["bin"] = np.floor(d["t"])
    agg = d.groupby("bin")[[f"d_{c}" for c in cols]].sum()
    out["t"] = agg.index.tolist()
    for c in cols:
        out[c] = agg[f"d_{c}"].round(1).tolist()
    return out


_STATE_CODE = {s: i for i, s in enumerate(STATES)}


def _timeline(
    iv: pd.DataFrame, per: pd.DataFrame, max_bins: int = 300, max_threads: int = 64
) -> dict[str, Any]:
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


# --- on-CPU categories ------------------------------------------------------------------


def _py_stack_at(data: BundleData, tids: np.ndarray, ts: np.ndarray) -> np.ndarray:
    iv = data.py_intervals
    out = np.full(len(ts), -1, dtype=np.int64)
    if iv is None or iv.empty or len(ts) == 0:
        return out
    left = pd.DataFrame({"t": ts, "tid": tids, "i": np.arange(len(ts))}).sort_values("t")
    merged = pd.merge_asof(left, iv.sort_values("start"), left_on="t", right_on="start", by="tid")
    ok = merged["stack_id"].notna() & (merged["t"] <= merged["end"] + 0.06)
    out[merged.loc[ok, "i"].to_numpy()] = merged.loc[ok, "stack_id"].astype("int64").to_numpy()
    return out


_INTERP = re.compile(
    r"(libpython|/python\d|_PyEval|PyEval_|_PyObject_|PyObject_Call|_PyFunction_|method_vectorcall|cfunction_|vectorcall)",
    re.I,
)


def mixed_stack(py: Stack, native: Stack) -> Stack:
    """Python frames, then the native frames below the interpreter's last frame."""
    if not py:
        return native
    cut = 0
    for i, f in enumerate(native):
        name, file = split_frame(f)
        if _INTERP.search(file) or _INTERP.search(name):
            cut = i + 1
    return py + native[cut:]


def _oncpu(
    tt: ThreadTime | None, data: BundleData, frames: FrameRules, m: dict[str, Any], a: Analysis
) -> None:
    samples: list[tuple[int, Stack, float]] = []  # (tid, stack, weight)
    if data.native_samples is not None and not data.native_samples.empty:
        ns = data.native_samples
        py_ids = _py_stack_at(data, ns["tid"].to_numpy(), ns["t"].to_numpy())
        weights = ns["weight"].to_numpy() if "weight" in ns else np.ones(len(ns))
        cache: dict[tuple[int, int], Stack] = {}
        for tid, sid, pid_, w in zip(
            ns["tid"].to_numpy(), ns["stack_id"].to_numpy(), py_ids, weights, strict=True
        ):
            key = (int(sid), int(pid_))
            st = cache.get(key)
            if st is None:
                st = mixed_stack(
                    data.py_stacks.get(int(pid_), ()), data.native_stacks.get(int(sid), ())
                )
                cache[key] = st
            samples.append((int(tid), st, float(w)))
        m["oncpu_source"] = "perf+py-spy" if data.py_intervals is not None else "perf"
    elif tt is not None and data.py_intervals is not None:
        samples = _py_oncpu_samples(data)
        m["oncpu_source"] = "py-spy"
    else:
        return
    native = m["oncpu_source"] != "py-spy"
    total = sum(w for _, _, w in samples)
    if native:
        m["oncpu_samples"] = len(samples)
    else:
        pyspy = data.bundle.collector("pyspy").details or {}
        rate = float(pyspy.get("rate_hz") or data.bundle.manifest.capture.get("rate_hz") or 100)
        m["oncpu_samples"] = round(total * rate)
    if total <= 0:
        for c in frames.names:
            m[f"oncpu_share_{c}"] = 0.0 if native or c not in _NATIVE_CATEGORIES else None
        m["oncpu_share_inference"] = 0.0
        m["oncpu_native_share"] = 0.0
        return
    by_cat: dict[str, float] = defaultdict(float)
    leaf_by_cat: dict[str, Counter[str]] = defaultdict(Counter)
    thread_by_cat: dict[str, Counter[int]] = defaultdict(Counter)
    stacks_by_cat: dict[str, Counter[Stack]] = defaultdict(Counter)
    leaf_all: Counter[str] = Counter()
    native_w = 0.0
    flame: Counter[Stack] = Counter()
    names = data.py_names
    per_stack: dict[tuple[int, Stack], float] = defaultdict(float)  # each stack once
    for tid, st, w in samples:
        per_stack[(tid, st)] += w
    for (tid, st), w in per_stack.items():
        cat = frames.categorize(st)
        by_cat[cat] += w
        leaf = _leaf_function(st)
        leaf_by_cat[cat][leaf] += w
        leaf_all[leaf] += w
        thread_by_cat[cat][tid] += w
        stacks_by_cat[cat][st] += w
        if any(is_native_frame(f) for f in st):
            native_w += w
        flame[(f"thread ({tid}): {names.get(tid, '')}", *st)] += w
    for c in frames.names:
        m[f"oncpu_share_{c}"] = _r(by_cat.get(c, 0.0) / total, 4)
    if not native:  # Python stacks cannot tell a GEMM from a memcpy: not measured
        for c in _NATIVE_CATEGORIES:
            m[f"oncpu_share_{c}"] = None
    m["oncpu_share_inference"] = _r(
        sum(by_cat.get(c, 0.0) for c in ("compute", "memory", "model")) / total, 4
    )
    m["oncpu_native_share"] = _r(native_w / total, 4)
    m["oncpu_top_function"] = leaf_all.most_common(1)[0][0] if leaf_all else ""
    pre = leaf_by_cat.get("preprocess", Counter())
    m["preprocess_top_function"] = pre.most_common(1)[0][0] if pre else ""
    comp: Counter[str] = Counter()
    for c in ("compute", "memory", "model"):
        comp.update(leaf_by_cat.get(c, Counter()))
    m["compute_top_function"] = comp.most_common(1)[0][0] if comp else ""
    pt = thread_by_cat.get("preprocess", Counter())
    ptotal = sum(pt.values())
    if ptotal > 0:
        m["preprocess_threads"] = sum(1 for v in pt.values() if v >= 0.1 * ptotal)
        top_tid, top_w = pt.most_common(1)[0]
        m["preprocess_top_thread_share"] = _r(top_w / ptotal, 3)
        m["preprocess_top_thread_busy"] = _thread_busy_fraction(tt, top_tid)
    else:
        m["preprocess_threads"] = 0
        m["preprocess_top_thread_share"] = 0.0
        m["preprocess_top_thread_busy"] = 0.0
    a.oncpu = {
        "total_weight": total,
        "native": native,
        "shares": {c: _r(by_cat.get(c, 0.0) / total, 4) for c in frames.names},
        "top_functions": {
            c: [(f, _r(w / total, 4)) for f, w in leaf_by_cat[c].most_common(5)]
            for c in leaf_by_cat
        },
        "top_stacks": {
            c: [(list(s), _r(w / total, 4)) for s, w in stacks_by_cat[c].most_common(3)]
            for c in stacks_by_cat
        },
        "descriptions": {c.name: c.description for c in frames.categories},
    }
    a.flames["cpu"] = list(flame.items())


def _leaf_function(st: Stack) -> str:
    return st[-1] if st else "?"


def _thread_busy_fraction(tt: ThreadTime | None, tid: int) -> float | None:
    if tt is None:
        return None
    row = tt.per_thread[tt.per_thread["tid"] == tid]
    if row.empty or float(row["total"].iloc[0]) <= 0:
        return None
    return _r(float(row["busy"].iloc[0]) / float(row["total"].iloc[0]), 3)


def _py_oncpu_samples(data: BundleData) -> list[tuple[int, Stack, float]]:
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
    weights = pd.concat(parts)
    weights = weights[weights["w"] > 0].groupby(["tid", "stack_id"])["w"].sum()
    return [
        (int(tid), data.py_stacks.get(int(sid), ()), float(w)) for (tid, sid), w in weights.items()
    ]


# --- locks ------------------------------------------------------------------------------


def _locks(tt: ThreadTime, data: BundleData, m: dict[str, Any], a: Analysis) -> None:
    iv = tt.intervals
    busy = float(sum(iv[s].sum() for s in BUSY_STATES))
    lk = iv[(iv["lock"] > 0) & (iv["futex_addr"] != "")]
    names = data.py_names
    hotspots: list[dict[str, Any]] = []
    if not lk.empty:
        # Group by address; addresses with one waiter each but the same Python site are one
        # lock seen through per-thread wait words (Python 3.13's parking lot).
        by_addr = lk.groupby("futex_addr")
        groups: dict[str, list[str]] = defaultdict(list)
        for addr, grp in by_addr:
            if grp["tid"].nunique() >= 2:
                groups[f"addr:{addr}"].append(str(addr))
            else:
                site = grp["wait_leaf"].mode().iloc[0] if grp["wait_leaf"].ne("").any() else ""
                groups[f"site:{site}" if site else f"addr:{addr}"].append(str(addr))
        for key, addrs in groups.items():
            grp = lk[lk["futex_addr"].isin(addrs)]
            waiters = grp["tid"].nunique()
            if waiters < 2:
                continue
            wait_s = float(grp["lock"].sum())
            sites = Counter(x for x in grp["wait_leaf"].tolist() if x)
            site = sites.most_common(1)[0][0] if sites else ""
            concurrent = int(grp.groupby("t")["tid"].nunique().max())
            hotspots.append(
                {
                    "key": key,
                    "address": addrs[0] if key.startswith("addr:") else f"{len(addrs)} addresses",
                    "addresses": addrs[:20],
                    "waiters": waiters,
                    "waiter_threads": [
                        {"tid": int(t), "name": names.get(int(t), ""), "wait_s": _r(float(s), 3)}
                        for t, s in grp.groupby("tid")["lock"]
                        .sum()
                        .sort_values(ascending=False)
                        .head(20)
                        .items()
                    ],
                    "wait_s": _r(wait_s, 3),
                    "share_of_busy": _r(_ratio(wait_s, busy), 4) if busy > 0 else 0.0,
                    "site": site,
                    "sites": [(s, n) for s, n in sites.most_common(5)],
                    "max_concurrent_waiters": concurrent,
                    "holder": _lock_holder(iv, grp, site, data),
                    "stacks": _waiter_stacks(grp, data),
                }
            )
    hotspots.sort(key=lambda h: -float(h["wait_s"] or 0))
    a.locks = hotspots
    m["lock_hotspots"] = len(hotspots)
    if hotspots:
        top = hotspots[0]
        m["lock_top_address"] = top["address"]
        m["lock_top_waiters"] = top["waiters"]
        m["lock_top_wait_s"] = top["wait_s"]
        m["lock_top_share"] = top["share_of_busy"]
        m["lock_top_site"] = top["site"]
        m["lock_top_holder_site"] = (top["holder"] or {}).get("site", "")
        m["lock_waiters_max"] = top["max_concurrent_waiters"]
    else:
        m["lock_top_address"] = ""
        m["lock_top_waiters"] = 0
        m["lock_top_wait_s"] = 0.0
        m["lock_top_share"] = 0.0
        m["lock_top_site"] = ""
        m["lock_top_holder_site"] = ""
        m["lock_waiters_max"] = 0


def _waiter_stacks(waits: pd.DataFrame, data: BundleData, n: int = 3) -> list[dict[str, Any]]:
    """The Python stacks the waiters of one lock waited in, longest total wait first."""
    known = waits[waits["stack_id"] >= 0]
    top = known.groupby("stack_id")["lock"].sum().sort_values(ascending=False).head(n)
    return [
        {"frames": list(data.py_stacks.get(int(sid), ())), "wait_s": _r(float(w), 3)}
        for sid, w in top.items()
    ]


def _lock_holder(
    iv: pd.DataFrame, waits: pd.DataFrame, site: str, data: BundleData
) -> dict[str, Any] | None:
    """Inferred holder: at ticks where threads waited, a thread that was running (or
    runnable) *inside* the locked region: its stack passes through the waiters' function at
    a later line than the one they wait on (the body of ``with lock:``). Reported as its
    most common leaf frame, and marked as inferred."""
    if not site:
        return None
    fn, file = split_frame(site)
    m = re.search(r":(\d+)\)$", site)
    wait_line = int(m.group(1)) if m else None
    cand = iv[
        iv["t"].isin(waits["t"].unique())
        & ((iv["running"] > 0) | (iv["runnable"] > 0))
        & (iv["stack_id"] >= 0)
    ]
    # not the waiters themselves at the ticks they waited
    waiting = pd.MultiIndex.from_arrays([waits["t"], waits["tid"]])
    cand = cand[~pd.MultiIndex.from_arrays([cand["t"], cand["tid"]]).isin(waiting)]

    def leaf_inside(sid: int) -> str:
        """The stack's leaf if it passes through the locked region, else ''."""
        st = data.py_stacks.get(int(sid), ())
        for f in st:
            if split_frame(f) != (fn, file):
                continue
            lm = re.search(r":(\d+)\)$", f)
            line = int(lm.group(1)) if lm else None
            if wait_line is None or line is None or line > wait_line:
                return st[-1]
        return ""

    inside = map_distinct(cand["stack_id"], leaf_inside)
    hit = inside != ""
    leaves: Counter[str] = Counter(inside[hit].tolist())
    threads: Counter[int] = Counter(int(t) for t in cand["tid"].to_numpy()[hit])
    if not leaves:
        return None
    site_, n = leaves.most_common(1)[0]
    return {
        "site": site_,
        "ticks": n,
        "threads": [
            {"tid": t, "name": data.py_names.get(t, ""), "ticks": c}
            for t, c in threads.most_common(5)
        ],
        "inferred": True,
    }


# --- GIL ---------------------------------------------------------------------------------


def _gil(data: BundleData, frames: FrameRules, m: dict[str, Any], a: Analysis) -> None:
    if data.gil_folded is None:
        return
    from diagnose.formats.pyspy import parse_raw

    by_thread: Counter[str] = Counter()
    by_site: Counter[str] = Counter()
    total = preprocess = 0.0
    for tid, name, stack, count in parse_raw(data.gil_folded):
        by_thread[f"{name or 'thread'} ({tid})"] += count
        by_site[stack[-1] if stack else "?"] += count
        total += count
        if stack and frames.categorize(tuple(stack)) == "preprocess":
            preprocess += count
    m["gil_held_samples"] = int(total)
    m["gil_holder_preprocess_share"] = _r(preprocess / total, 3) if total > 0 else 0.0
    if total > 0:
        t, n = by_thread.most_common(1)[0]
        m["gil_holder_top"] = t
        m["gil_holder_top_share"] = _r(n / total, 3)
        m["gil_holder_top_site"] = by_site.most_common(1)[0][0]
    else:
        m["gil_holder_top"] = ""
        m["gil_holder_top_share"] = 0.0
        m["gil_holder_top_site"] = ""
    a.extra["gil_holders"] = (
        [(k, _r(v / total, 3)) for k, v in by_thread.most_common(10)] if total else []
    )
    a.extra["gil_sites"] = (
        [(k, _r(v / total, 3)) for k, v in by_site.most_common(10)] if total else []
    )


# --- flames --------------------------------------------------------------------------------


def _flames(tt: ThreadTime | None, data: BundleData, a: Analysis) -> None:
    if data.py_intervals is not None and not data.py_intervals.empty:
        iv = data.py_intervals
        per = (
            (iv["end"] - iv["start"]).groupby([iv["tid"], iv["stack_id"]], sort=False).sum()
        )  # a stack per thread, once
        wall: Counter[Stack] = Counter()
        for (tid, sid), d in zip(per.index, per.to_numpy(), strict=True):
            wall[
                (
                    f"thread ({tid}): {data.py_names.get(int(tid), '')}",
                    *data.py_stacks.get(int(sid), ()),
                )
            ] += float(d)
        a.flames["wall"] = list(wall.items())
    if tt is not None:
        iv = tt.intervals
        off: Counter[Stack] = Counter()
        for state in ("gil", "lock", "io"):
            sel = iv[iv[state] > 0]
            per = sel.groupby(["tid", "stack_id"], sort=False)[state].sum()
            for (tid, sid), w in zip(per.index, per.to_numpy(), strict=True):
                st = data.py_stacks.get(int(sid), ()) if sid >= 0 else ()
                off[
                    (f"{state} wait", f"thread ({tid}): {data.py_names.get(int(tid), '')}", *st)
                ] += float(w)
        a.flames["waits"] = list(off.items())  # empty: measured, and no thread waited


# --- entry point ---------------------------------------------------------------------------


def analyse_data(data: BundleData, frames: FrameRules) -> Analysis:
    m: dict[str, Any] = {}
    series: dict[str, Any] = {}
    _system_metrics(data, m)
    _process_metrics(data, m, series)
    _cpu_metrics(data, m, series)
    tt = thread_time(data, frames)
    a = Analysis(metrics=m, unmeasured={}, per_thread=None, thread_time=tt, series=series)
    if tt is not None:
        _thread_metrics(tt, data, m, series)
        a.per_thread = tt.per_thread
        if data.py_intervals is not None:
            _locks(tt, data, m, a)
    _oncpu(tt, data, frames, m, a)
    _gil(data, frames, m, a)
    _flames(tt, data, a)
    from diagnose.analyse import extensions

    for ext in extensions.ANALYSES:
        ext(data, frames, a)
    # what was not measured, and why
    for name, d in METRICS.items():
        if m.get(name) is None:
            m[name] = None
            reasons = [data.missing[s] for s in d.sources if s in data.missing]
            a.unmeasured[name] = reasons[0] if reasons else "no data for it in this capture"
    return a
