"""The target process and the host it ran on: cores it may use, libraries and thread-pool
settings (system.json), its CPU time, memory and faults (proc/process.csv), and how busy
its CPUs were with its work, diagnose's and others' (proc/cpus.csv)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from diagnose.analyse.model import Context, rounded, series_items

_POOL_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
             "TORCH_NUM_THREADS", "ORT_NUM_THREADS", "TF_NUM_INTRAOP_THREADS")  # fmt: skip


def system_metrics(ctx: Context) -> None:
    """Step: the cores the target may use, its libraries and thread-pool settings."""
    m, s = ctx.metrics, ctx.data.system
    # the target and its sibling workers, as target selection found them (collect/target.py)
    m["service_processes"] = 1 + len(ctx.data.bundle.manifest.target.siblings)
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
    outbound = s.get("outbound")
    if isinstance(outbound, list):  # absent in bundles of before; null: not readable
        peers = [p for p in (_peer(x) for x in outbound[:PEERS_READ]) if p is not None]
        m["io_peers"] = "; ".join(_peer_text(*p) for p in peers[:PEERS_SHOWN]) or "none"
        m["io_peer_top"] = peers[0][0] if peers else ""
    _touched(m, s)


def _touched(m: dict[str, Any], s: Mapping[str, Any]) -> None:
    """The memory the target accessed during the capture, against its last-level cache:
    data that fits in the cache cannot be streamed from DRAM."""
    touched = s.get("touched")
    if not isinstance(touched, dict) or not isinstance(touched.get("bytes"), int):
        return
    m["touched_mb"] = rounded(touched["bytes"] / (1024 * 1024), 1)
    llc = last_level_cache_bytes((s.get("cpu") or {}).get("caches") or [])
    if llc:
        m["touched_to_llc"] = rounded(touched["bytes"] / llc, 3)


def last_level_cache_bytes(caches: list[Any]) -> int | None:
    """The largest data or unified cache's size (sysfs's "32768K"), or None."""
    best = 0
    for c in caches:
        if not isinstance(c, dict) or c.get("type") == "Instruction":
            continue
        text = str(c.get("size", "")).strip().upper()
        unit = {"K": 1024, "M": 1024 * 1024}.get(text[-1:], 1)
        try:
            best = max(best, int(text.rstrip("KM")) * unit)
        except ValueError:
            continue
    return best or None


#: entries of system.json's ``outbound`` read (diagnose writes at most 10), and named
PEERS_READ, PEERS_SHOWN = 10, 3


def _peer(x: object) -> tuple[str, int, int] | None:
    """(address, connections, threads waiting) of one ``outbound`` entry; None if malformed
    (a bundle from elsewhere)."""
    if not isinstance(x, dict):
        return None
    peer, n, waiting = x.get("peer"), _count(x.get("connections")), _count(x.get("threads_waiting"))
    if not isinstance(peer, str) or not peer or len(peer) > 64 or n is None or waiting is None:
        return None
    return peer, n, waiting


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _peer_text(peer: str, connections: int, waiting: int) -> str:
    """``10.0.0.5:5432 (8 connections, 7 threads blocked on them)``."""
    text = f"{peer} ({connections} connection{'s' if connections != 1 else ''}"
    if waiting:
        text += f", {waiting} thread{'s' if waiting != 1 else ''} blocked on {'them' if connections != 1 else 'it'}"
    return text + ")"


def process_metrics(ctx: Context) -> None:
    """Step: the target's CPU time, memory and page faults over the capture."""
    m, series, p = ctx.metrics, ctx.out.series, ctx.data.process
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
    m["process_cpu_cores"] = rounded((cpu[-1] - cpu[0]) / span, 3)
    if cpu[-1] - cpu[0] > 0:
        m["process_sys_share"] = rounded(
            (p["stime"].iloc[-1] - p["stime"].iloc[0]) / (cpu[-1] - cpu[0]), 3
        )
    if "tool_cpu_s" in p:  # read at every 5th tick: over the span of its own readings
        tool = pd.to_numeric(p["tool_cpu_s"], errors="coerce")
        read = tool.notna()
        tool, t_read = tool[read], p["t"][read]
        tool_span = float(t_read.iloc[-1] - t_read.iloc[0]) if len(tool) >= 2 else 0.0
        if tool_span > 0:
            used = max(0.0, float(tool.iloc[-1] - tool.iloc[0]))
            m["tool_cpu_cores"] = rounded(used / tool_span, 3)
    if m.get("cores_available") and m["process_cpu_cores"] is not None:
        m["process_cpu_share"] = rounded(m["process_cpu_cores"] / m["cores_available"], 3)
        if m.get("service_processes") == 1:  # host_processes adds a master's or helpers' CPU
            m["service_cpu_share"] = m["process_cpu_share"]
    rss = p["rss_bytes"].to_numpy() / (1024 * 1024)
    m["rss_mb"] = rounded(rss[-1], 1)
    t = p["t"].to_numpy()
    if len(t) >= 3 and np.ptp(t) > 0:
        slope = np.polyfit(t - t[0], rss, 1)[0]
        m["rss_growth_mb_per_min"] = rounded(slope * 60, 2)
    m["minflt_per_s"] = rounded((p["minflt"].iloc[-1] - p["minflt"].iloc[0]) / span, 1)
    m["majflt_per_s"] = rounded((p["majflt"].iloc[-1] - p["majflt"].iloc[0]) / span, 2)
    # time series for charts: CPU cores used per second by the process
    series["process"] = {
        "t": [round(x, 3) for x in t.tolist()],
        "rss_mb": [round(x, 1) for x in rss.tolist()],
        "threads": p["threads"].fillna(0).astype(int).tolist(),
        "sys_running": p["sys_running"].fillna(0).tolist() if "sys_running" in p else [],
    }


def tool_parts(ctx: Context) -> None:
    """Step: what diagnose's own CPU went to while the window was open, by its threads and
    helpers (the proc collector's ``tool_cpu_parts_s``, collect/toolcpu.py), in cores."""
    rec = ctx.data.bundle.manifest.collectors.get("proc")
    details = rec.details if rec is not None else {}
    parts, span = details.get("tool_cpu_parts_s"), _number(details.get("tool_cpu_parts_span_s"))
    if not isinstance(parts, dict) or span is None or span <= 0:
        return
    used = {str(k): v for k, v in ((k, _number(v)) for k, v in parts.items()) if v is not None}
    ctx.out.extra["tool_cpu_parts"] = [
        {"part": k, "cpu_s": round(v, 3), "cores": round(v / span, 3)}
        for k, v in sorted(used.items(), key=lambda kv: (-kv[1], kv[0]))
        if v >= 0
    ]


def _number(v: object) -> float | None:
    """``v`` as a finite float; None for anything else (a hand-edited manifest)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
        return float(v)
    return None


def cpu_metrics(ctx: Context) -> None:
    """Step: how busy the CPUs the target may use were, and with whose work."""
    m, series, data = ctx.metrics, ctx.out.series, ctx.data
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
        m["host_cpu_util"] = rounded(float(per_cpu.loc[sel].mean()), 3)
        cores = m.get("cores_available")
        if m.get("tool_cpu_cores") is not None and cores:
            m["tool_cpu_share"] = rounded(m["tool_cpu_cores"] / cores, 3)
        if m.get("process_cpu_share") is not None:
            other = max(0.0, m["host_cpu_util"] - m["process_cpu_share"])
            m["host_other_cpu_share"] = rounded(other, 3)
            if m["host_cpu_util"] > 0:
                m["process_share_of_cpu_used"] = rounded(
                    min(1.0, m["process_cpu_share"] / m["host_cpu_util"]), 3
                )
            if m.get("tool_cpu_share") is not None:
                m["host_foreign_cpu_share"] = rounded(max(0.0, other - m["tool_cpu_share"]), 3)
    # per-core series, binned to at most 200 points
    ts = sorted(c["t"].unique().tolist())
    step = max(1, len(ts) // 200)
    keep = set(ts[::step])
    cc = c[c["t"].isin(keep) & c["util"].notna()]
    series["cpus"] = {
        str(cpu): {"t": grp["t"].round(2).tolist(), "util": grp["util"].round(3).tolist()}
        for cpu, grp in cc.groupby(cc["cpu"].astype(int))
    }
    series["cpu_mean"] = {str(int(k)): round(float(v), 3) for k, v in series_items(per_cpu)}


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


#: neighbours named in host_neighbour_names, busiest first
NAMED_NEIGHBOURS = 3


def host_processes(ctx: Context) -> None:
    """Step: whose the other processes' CPU was (proc/host.csv): the target's clients on this
    host (a load generator), its own service's other processes (pre-fork workers), or
    neighbours. A run-queue wait the clients cause is the test set-up's; only neighbours
    "take the cores" (rules/scheduling.toml)."""
    h, m = ctx.data.host_procs, ctx.metrics
    cores = m.get("cores_available")
    if h is None or h.empty or not cores:
        return
    first, last = float(h["t"].min()), float(h["t"].max())
    if last <= first:
        return
    cpu_at_first: dict[int, float] = {}  # a process not there at the first scan: from 0
    cpu_last: dict[int, float] = {}
    comm: dict[int, str] = {}
    role: dict[int, str] = {}
    cols = [
        h[c].tolist() if c in h else [""] * len(h) for c in ("t", "pid", "comm", "cpu_s", "role")
    ]
    for t, pid, name, cpu, r in sorted(zip(*cols, strict=True), key=lambda row: row[0]):
        pid = int(pid)
        if t == first:
            cpu_at_first[pid] = float(cpu)
        cpu_last[pid] = float(cpu)
        comm[pid] = "" if pd.isna(name) else str(name)
        if isinstance(r, str) and r:
            role[pid] = r
    used = {
        pid: max(0.0, cpu - cpu_at_first.get(pid, 0.0)) / (last - first)
        for pid, cpu in cpu_last.items()
    }
    per_role: dict[str, float] = {}
    for pid, cores_used in used.items():
        r = role.setdefault(pid, "other")
        per_role[r] = per_role.get(r, 0.0) + cores_used
    for name, metric in (
        ("client", "host_client_cpu_share"),
        ("service", "host_service_cpu_share"),
        ("other", "host_neighbour_cpu_share"),
    ):
        m[metric] = rounded(per_role.get(name, 0.0) / cores, 3)
    if m.get("process_cpu_share") is not None:
        m["service_cpu_share"] = rounded(m["process_cpu_share"] + m["host_service_cpu_share"], 3)
    busy = sorted((p for p in used if used[p] >= 0.01), key=lambda p: (-used[p], p))

    def names(r: str, limit: int | None = None) -> str:
        return ", ".join(f"{comm[p]} ({p})" for p in [p for p in busy if role[p] == r][:limit])

    m["host_client_names"] = names("client")
    m["host_neighbour_names"] = names("other", NAMED_NEIGHBOURS)
    ctx.out.extra["host_processes"] = [
        {"pid": p, "comm": comm[p], "role": role[p], "cores": round(used[p], 3)} for p in busy[:10]
    ]
