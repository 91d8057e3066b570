"""The report as one plain, JSON-ready dict: the stable contract every renderer displays.

``report.json`` is this dict (minus the ``charts`` the HTML draws). Its shape is versioned by
``schema`` and documented in ``docs/report-json.md``; fields are only ever added within a
schema version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from diagnose import __version__
from diagnose.analyse.model import Analysis
from diagnose.bundle.manifest import CollectorStatus
from diagnose.bundle.reader import Bundle
from diagnose.formats.stacks import Stack
from diagnose.render.schema import REPORT_SCHEMA, NotMeasured, Report, VerdictSection
from diagnose.verdict.engine import Verdict
from diagnose.verdict.ruleset import RuleSet

CATEGORY_TITLES = {
    "preprocess": "Preprocessing",
    "lock": "Lock contention",
    "scheduling": "Scheduling",
    "compute": "Model compute",
    "memory_bandwidth": "Memory bandwidth",
    "io": "Waiting on I/O",
    "idle": "Idle",
    "unknown": "Inconclusive",
}

#: How a missing collector limits the diagnosis, for the "not measured" list.
COLLECTOR_IMPACT = {
    "proc": "thread states, run-queue delay, context switches, lock addresses",
    "pyspy": "Python stacks: lock sites, preprocessing vs model split, flame graph",
    "gil": "which thread holds the GIL",
    "system": "cores available, libraries and thread-pool settings",
    "perf": "native stacks: which kernels (GEMM, memcpy, malloc) the CPU runs",
    "perf_sched": "per-event run-queue delay and off-CPU stacks",
    "c2c": "false sharing (contended cache lines)",
    "perf_stat": "hardware counters (IPC, cache misses)",
}


def jsonable(v: Any) -> Any:
    """Turn numpy/pandas scalars and NaN into plain JSON values."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if v is pd.NA or v is pd.NaT:
        return None
    return v


#: report.json keeps at most this many stacks of each flame view, the heaviest; the others
#: add up into one stack (SMALLER_STACKS), so a view's total stays whole. A 64-thread, 60 s
#: capture has a few thousand distinct stacks.
MAX_STACKS = 5000
SMALLER_STACKS = "(smaller stacks)"


def stack_section(flames: dict[str, list[tuple[Stack, float]]]) -> dict[str, Any]:
    """The flame views' stacks, each frame's text stored once: ``frames`` is the list of
    frames; ``views.VIEW`` a list of ``[[frame index, ...], weight]``, root first, heaviest
    first. A view that is absent was not recorded; an empty one was, and held nothing."""
    frames: dict[str, int] = {}
    views: dict[str, list[list[Any]]] = {}
    for view, stacks in flames.items():
        ordered = sorted(stacks, key=lambda s: (-s[1], s[0]))
        rows = [
            [[frames.setdefault(f, len(frames)) for f in stack], round(float(w), 6)]
            for stack, w in ordered[:MAX_STACKS]
        ]
        rest = ordered[MAX_STACKS:]
        if rest:
            index = frames.setdefault(SMALLER_STACKS, len(frames))
            rows.append([[index], round(sum(float(w) for _, w in rest), 6)])
        views[view] = rows
    return {"frames": list(frames), "views": views}


def report_flames(report: Mapping[str, Any]) -> dict[str, list[tuple[Stack, float]]]:
    """The flame views' stacks back from a report's ``stacks`` section."""
    section = report.get("stacks") or {}
    frames = section.get("frames") or []
    return {
        view: [(tuple(frames[i] for i in ids), float(w)) for ids, w in rows]
        for view, rows in (section.get("views") or {}).items()
    }


def _threads_table(a: Analysis, limit: int = 200) -> list[dict[str, Any]]:
    per = a.per_thread
    if per is None or per.empty:
        return []
    per = per.sort_values(["busy", "tid"], ascending=[False, True]).head(limit)
    rows = []
    for _, r in per.iterrows():
        # a window too short for a tick of the /proc sampler (a capture stopped as it
        # opened) leaves a thread no time at all: 0 s, and no shares
        total = float(r["total"])
        total = total if math.isfinite(total) and total > 0 else 0.0
        rows.append(
            {
                "tid": int(r["tid"]),
                "name": str(r["name"] or ""),
                "comm": str(r["comm"] or ""),
                "role": str(r["role"]),
                "python": bool(r["python"]),
                "seconds": round(total, 3),
                "shares": {
                    s: round(float(r[s]) / total, 4) if total else None
                    for s in ("running", "runnable", "gil", "lock", "io", "idle", "other")
                },
                "voluntary_switches": None if pd.isna(r["vcsw"]) else int(r["vcsw"]),
                "involuntary_switches": None if pd.isna(r["ivcsw"]) else int(r["ivcsw"]),
                "migrations": None if pd.isna(r["migrations"]) else int(r["migrations"]),
            }
        )
    return rows


def _roles(a: Analysis) -> list[dict[str, Any]]:
    per = a.per_thread
    if per is None or per.empty:
        return []
    cols = ["running", "runnable", "gil", "lock", "io", "idle", "other"]
    g = per.groupby("role")
    out: list[dict[str, Any]] = []
    for role, grp in g:
        total = float(grp["total"].sum()) or 1.0
        out.append(
            {
                "role": str(role),
                "threads": len(grp),
                "shares": {c: round(float(grp[c].sum()) / total, 4) for c in cols},
                "busy_threads": round(
                    float(grp["busy"].sum()) / max(a.metrics.get("window_s") or 1, 1e-9), 2
                ),
            }
        )
    out.sort(key=lambda r: -r["busy_threads"])
    return out


def not_measured(bundle: Bundle) -> list[NotMeasured]:
    out: list[NotMeasured] = []
    for name, rec in bundle.manifest.collectors.items():
        if rec.status is CollectorStatus.OK and not rec.reason:
            continue
        out.append(
            {
                "collector": name,
                "status": rec.status.value,
                "reason": rec.reason,
                "impact": COLLECTOR_IMPACT.get(name, ""),
            }
        )
    return out


def _system_json(bundle: Bundle) -> dict[str, Any]:
    if not bundle.has("system.json"):
        return {}
    try:
        raw = bundle.json("system.json")
    except Exception:  # a broken system.json is reported by the collectors table
        return {}
    return raw if isinstance(raw, dict) else {}


def _verdict_section(verdict: Verdict, m: dict[str, Any]) -> VerdictSection:
    return {
        "primary": verdict.primary,
        "title": CATEGORY_TITLES.get(verdict.primary, verdict.primary),
        "kind": verdict.kind,
        "confidence": verdict.confidence,
        "headline": verdict.headline,
        "ranking": verdict.ranking(),
        "confidence_notes": verdict.confidence_notes,
        "unexplained_share": verdict.unexplained,
        "placed_share": m.get("oncpu_share_placed"),
        "uncertain": verdict.uncertain,
    }


def _environment(m: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    return {
        "cores_available": m.get("cores_available"),
        "logical_cpus": m.get("logical_cpus"),
        "physical_cores": m.get("physical_cores"),
        "cpus_usable": m.get("cpus_usable"),
        "quota_cores": m.get("cpu_quota_cores"),
        "capacity": system.get("capacity", {}),
        "cpu": {k: v for k, v in (system.get("cpu") or {}).items() if k != "caches"},
        "caches": (system.get("cpu") or {}).get("caches", []),
        "python": system.get("python", {}),
        "libraries": system.get("libraries", {}),
        "env": system.get("env", {}),
        "host": system.get("host", {}),
        "threads_busy": m.get("threads_busy"),
        "cpu_demand_threads_mean": m.get("cpu_demand_threads_mean"),
    }


#: analysis.extra entries the report shows in their own section, not under "extra"
_PLACED_ELSEWHERE = ("gil_holders", "gil_sites", "tool_cpu_parts")


def build_report(bundle: Bundle, analysis: Analysis, verdict: Verdict, ruleset: RuleSet) -> Report:
    man = bundle.manifest
    m = analysis.metrics
    report: Report = {
        "schema": REPORT_SCHEMA,
        "tool_version": __version__,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "bundle": {
            "path": str(Path(bundle.root).resolve()),
            "schema_version": man.schema_version,
            "state": man.state,
            "complete": man.state == "complete",
        },
        "target": man.target.to_dict(),
        # an unfinished capture has no end yet: the keys are there, null (docs/report-json.md)
        "capture": {
            "ended": None,
            "duration_actual": None,
            "ended_by": None,
            "window_start_s": 0.0,  # bundles from before the window waited for collectors
            "cpu_budget": None,  # bundles from before diagnose had a CPU budget
            **man.capture.to_dict(),
            # what measuring cost: diagnose and every helper, while capturing (metrics)
            "tool_cpu_cores": m.get("tool_cpu_cores"),
            "tool_cpu_share": m.get("tool_cpu_share"),
            # ... and what it went to, by diagnose's threads and helpers (analyse/host.py)
            "tool_cpu_parts": analysis.extra.get("tool_cpu_parts", []),
        },
        "verdict": _verdict_section(verdict, m),
        "findings": [f.to_dict() for f in verdict.findings],
        "not_evaluated": [n.to_dict() for n in verdict.not_evaluated],
        "broken_rules": verdict.broken_rules,
        "rules": {"sources": ruleset.sources, "count": len(ruleset.rules)},
        "metrics": m,
        "unmeasured": analysis.unmeasured,
        "collectors": {
            name: {"status": rec.status.value, "reason": rec.reason, "details": rec.details}
            for name, rec in man.collectors.items()
        },
        "not_measured": not_measured(bundle),
        "threads": _threads_table(analysis),
        "roles": _roles(analysis),
        "locks": analysis.locks,
        "oncpu": analysis.oncpu,
        "gil": {
            "holders": analysis.extra.get("gil_holders", []),
            "sites": analysis.extra.get("gil_sites", []),
        },
        "environment": _environment(m, _system_json(bundle)),
        # what the charts draw (render/charts.py): the report re-renders from report.json alone
        "series": analysis.series,
        "stacks": stack_section(analysis.flames),
        "speedscope": [
            f
            for f in ("python/python.speedscope.json", "native/native.speedscope.json")
            if bundle.has(f)
        ],
        "extra": {k: v for k, v in analysis.extra.items() if k not in _PLACED_ELSEWHERE},
        "service": {},  # filled by diagnose/app/service.py for a service of several workers
    }
    return cast(Report, jsonable(report))  # the same shape, as JSON values
