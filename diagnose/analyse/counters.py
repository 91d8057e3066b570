"""Hardware: perf's memory sampling (``c2c``: cache lines bouncing between cores, the
signature of false sharing) and hardware counters (``perf_stat``: IPC, cache misses)."""

from __future__ import annotations

from collections import Counter

from diagnose.analyse.model import Context, rounded
from diagnose.formats.perf_stat import parse_stat


def false_sharing(ctx: Context) -> None:
    """Step: contended cache lines (perf c2c): HITM share, the top line's offsets, threads
    and symbols."""
    rep = ctx.data.c2c
    if rep is None:
        return
    m = ctx.metrics
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
        m["c2c_hitm_load_share"] = rounded(hitm_total / float(loads), 4)
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
            rounded(int(top.get("hitm") or 0) / hitm_total, 4) if hitm_total else None
        )
        m["c2c_top_line_offsets"] = len({x.get("offset") for x in acc if x.get("offset")})
        tids = {x.get("tid") for x in acc if x.get("tid") is not None}
        cpus = max((int(x.get("cpus") or 0) for x in acc), default=0)
        m["c2c_top_line_threads"] = len(tids) if tids else cpus
        syms: Counter[str] = Counter()
        for x in acc:
            syms[str(x.get("source") or x.get("symbol") or "?")] += int(x.get("records") or 1)
        m["c2c_top_line_symbols"] = ", ".join(s for s, _ in syms.most_common(3))
    ctx.out.extra.setdefault("perf", {})["c2c"] = {
        "metric": rep.get("metric"),
        "lines": lines[:10],
        "summary": summary,
    }


def hardware_counters(ctx: Context) -> None:
    """Step: instructions per cycle and the cache-miss ratio (perf stat)."""
    if ctx.data.perf_stat is None:
        return
    counted = {
        c.event.split(":")[0]: c.value
        for c in parse_stat(ctx.data.perf_stat)
        if c.value is not None
    }
    m = ctx.metrics
    if counted.get("cycles") and "instructions" in counted:
        m["ipc"] = rounded(counted["instructions"] / counted["cycles"], 3)
    if counted.get("cache-references") and "cache-misses" in counted:
        m["cache_miss_ratio"] = rounded(counted["cache-misses"] / counted["cache-references"], 4)
    ctx.out.extra.setdefault("perf", {})["counters"] = counted
