"""The sweep report as one plain, JSON-ready dict (``SWEEPDIR/report.json``).

Built from the record (``sweep.json``), each step's report (``bundle/report.json``: its
verdict and metrics) and the comparison across each knee (diagnose/app/compare.py). The
renderers (render/sweep.py) only display it. Its shape is versioned by ``schema`` and
documented in docs/sweep.md; fields are only ever added within a schema version.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from diagnose import __version__
from diagnose.sweep.analysis import (
    ERROR_LIMIT,
    GAIN_SHARE,
    NOISE,
    P99_BEND_SHARE,
    SAFE_FACTOR,
    Knee,
    SettingOutcome,
    StepPoint,
    bands,
    best_setting,
    find_knee,
    p99_change,
    recommend,
    users_text,
)
from diagnose.sweep.loadgen import SATURATED_SHARE, LoadFigures
from diagnose.verdict.service import lead_verdict

SWEEP_REPORT_SCHEMA = "diagnose.sweep-report/1"

#: The metrics of each step's report shown next to its load figures (docs/metrics.md).
STEP_METRICS = (
    "busy_threads_mean",
    "process_cpu_cores",
    "busy_share_running",
    "busy_share_runnable",
    "busy_share_lock",
    "busy_share_gil",
    "busy_share_io",
    "runnable_per_core",
    "tool_cpu_share",
    "host_foreign_cpu_share",
)
#: A step whose users were in flight less than this share of the time (QPS x mean latency /
#: users) was not loaded at its nominal concurrency.
IN_FLIGHT_SHARE = 0.7
#: The host this busy while the generator used this share of its CPUs: they competed.
HOST_FULL = 0.95
GENERATOR_HOST_SHARE = 0.25
COMPARE_ROWS = 6  # judged metric changes shown across a knee
#: A step's capture covering less of its load window than this is said so.
CAPTURE_COVERS = 0.8

StepReports = Mapping[tuple[str, int], Mapping[str, Any] | None]


def step_point(step: Mapping[str, Any]) -> StepPoint:
    load = step.get("load")
    if not load or step.get("status") in ("failed", "interrupted"):
        return StepPoint(int(step["users"]), None, failed=True)
    f = LoadFigures.from_dict(load)
    gen = step.get("generator") or {}
    return StepPoint(
        int(step["users"]),
        f.qps,
        p50_ms=f.p50_ms,
        p95_ms=f.p95_ms,
        p99_ms=f.p99_ms,
        error_rate=f.error_rate,
        saturated=bool(gen.get("saturated")),
    )


def verdict_label(v: Mapping[str, Any] | None) -> str:
    if not v:
        return "no verdict"
    return f"{v.get('title')}" + (f" ({v['kind']})" if v.get("kind") else "")


def _verdict(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not report:
        return None
    v = lead_verdict(report)
    main = [f for f in report.get("findings", []) if not f.get("advisory")]
    return {
        "primary": v.get("primary"),
        "kind": v.get("kind"),
        "title": v.get("title"),
        "confidence": v.get("confidence"),
        "headline": v.get("headline"),
        "label": verdict_label(v),
        "finding": {
            "id": main[0].get("id"),
            "title": main[0].get("title"),
            "summary": main[0].get("summary"),
            "fix": (main[0].get("fixes") or [None])[0],
        }
        if main
        else None,
    }


def _links(step: Mapping[str, Any], report: Mapping[str, Any] | None) -> dict[str, str]:
    bundle = step.get("bundle")
    if not bundle or report is None:
        return {}
    return {fmt: f"{bundle}/report.{fmt}" for fmt in ("html", "md", "json")}


def _step_row(
    step: Mapping[str, Any], point: StepPoint, band: str, report: Mapping[str, Any] | None
) -> dict[str, Any]:
    load = step.get("load")
    f = LoadFigures.from_dict(load) if load else None
    metrics = (report or {}).get("metrics") or {}
    in_flight = None
    if f is not None and f.mean_ms is not None:
        in_flight = round(f.requests / f.seconds * f.mean_ms / 1000, 2) if f.seconds else None
    return {
        "users": point.users,
        "status": step.get("status"),
        "reason": step.get("reason") or "",
        "band": band,
        "qps": None if f is None else round(f.qps, 2),
        "requests": None if f is None else f.requests,
        "failures": None if f is None else f.failures,
        "error_rate": None if f is None else round(f.error_rate, 4),
        "seconds": None if f is None else f.seconds,
        "p50_ms": None if f is None else f.p50_ms,
        "p95_ms": None if f is None else f.p95_ms,
        "p99_ms": None if f is None else f.p99_ms,
        "mean_ms": None if f is None else f.mean_ms,
        "max_ms": None if f is None else f.max_ms,
        "in_flight": in_flight,
        "errors": [] if f is None else f.errors[:5],
        "generator": step.get("generator"),
        "capture": step.get("capture"),
        "window": step.get("window"),
        "verdict": _verdict(report),
        "metrics": {k: metrics.get(k) for k in STEP_METRICS},
        "bundle": step.get("bundle"),
        "load_dir": step.get("load_dir"),
        "links": _links(step, report),
        "report_error": step.get("report_error"),
    }


def _across(compare: Mapping[str, Any] | str | None, link: str | None) -> dict[str, Any] | None:
    """What changed across the knee: the comparison's verdict change and top judged metrics."""
    if compare is None:
        return None
    if isinstance(compare, str):
        return {"error": compare}
    rows = [m for m in compare.get("metrics", []) if m.get("change") in ("better", "worse")]
    # the verdicts' evidence, then where busy time went (the shares that explain a knee),
    # then the rest in compare's order (a share of a few on-CPU samples moves by chance)
    rows.sort(key=lambda m: (not m.get("focus"), not str(m["name"]).startswith("busy_share_")))
    f = compare.get("findings") or {}
    return {
        "verdict": compare["verdict"]["text"],
        "verdict_changed": bool(compare["verdict"].get("changed")),
        "metrics": [
            {
                "name": m["name"],
                "before": m.get("display_before"),
                "after": m.get("display_after"),
                "change": m["change"],
                "description": m.get("description", ""),
            }
            for m in rows[:COMPARE_ROWS]
        ],
        "appeared": [x["title"] for x in f.get("appeared", [])],
        "disappeared": [x["title"] for x in f.get("disappeared", [])],
        "caveats": list(compare.get("caveats", [])),
        "link": link,
    }


def _caveats(rows: list[dict[str, Any]], tool: str, cpus: int | None) -> list[str]:
    out = []
    sat = [r for r in rows if r["band"] == "saturated"]
    if sat:
        worst = max((r["generator"] or {}).get("busiest_thread_demand") or 0 for r in sat)
        out.append(
            f"the load generator ({tool}) saturated at "
            + ", ".join(str(r["users"]) for r in sat)
            + f" users: its busiest thread wanted a core {worst:.0%} of the window "
            f"(>= {SATURATED_SHARE:.0%}): there QPS is the generator's limit, not the service's, "
            "and those steps are left out of the knee (locust --processes, a lighter user class "
            "such as FastHttpUser, or a generator on another host)"
        )
    for r in rows:
        if r["band"] == "failed":
            out.append(f"the step at {users_text(r['users'])} failed: {r['reason'] or r['status']}")
        elif r["band"] == "errors":
            first = r["errors"][0]["error"] if r["errors"] else "see its load output"
            out.append(
                f"at {users_text(r['users'])} {r['error_rate']:.1%} of the requests failed (more than "
                f"{ERROR_LIMIT:.0%}; first error: {first}): not a step to serve at"
            )
    low = [
        r
        for r in rows
        if r["in_flight"] is not None and r["band"] not in ("failed",)
        and r["in_flight"] < IN_FLIGHT_SHARE * r["users"]
    ]  # fmt: skip
    if low:
        out.append(
            "fewer requests were in flight than users at "
            + ", ".join(f"{users_text(r['users'])} ({r['in_flight']:.1f})" for r in low)
            + " (QPS x mean latency): the users wait between requests (think time) or the "
            "generator lags, so the concurrency axis overstates the load there"
        )
    short = [
        r
        for r in rows
        if (w := r.get("window") or {}).get("capture_covers") is not None
        and w["capture_covers"] < CAPTURE_COVERS
    ]
    if short:
        out.append(
            "the capture covered only "
            + ", ".join(
                f"{r['window']['capture_covers']:.0%} at {users_text(r['users'])}" for r in short
            )
            + " of the load window: its collectors took longer to start than the step before "
            "(a loaded host); those steps' verdicts rest on part of the window"
        )
    crowded = [r for r in rows if _crowded(r["generator"], cpus)]
    if crowded:
        r = crowded[0]
        out.append(
            f"from {users_text(r['users'])} the host's CPUs were {r['generator']['host_busy_share']:.0%} "
            f"busy and the generator itself used {r['generator']['cpu_cores']:.2f} of its {cpus} "
            "cores: generator and service competed for them; for a clean curve run the "
            "generator on another host"
        )
    return out


def _crowded(g: Mapping[str, Any] | None, cpus: int | None) -> bool:
    """The host was full while the generator itself held a quarter of its cores."""
    g = g or {}
    return (
        bool(cpus)
        and (g.get("host_busy_share") or 0) >= HOST_FULL
        and (g.get("cpu_cores") or 0) >= GENERATOR_HOST_SHARE * (cpus or 0)
    )


def _generator_text(users: int, g: Mapping[str, Any]) -> str:
    return (
        f"at {users_text(users)} it used {g.get('cpu_cores') or 0:.2f} cores, its busiest thread "
        f"wanting a core {g.get('busiest_thread_demand') or 0:.0%} of the window"
    )


def _p99_flat_caveat(rows: list[dict[str, Any]], knee: Knee, cpus: int | None) -> str | None:
    """QPS stopped growing while P99 did not rise with the concurrency: in a closed loop the
    requests were then not all in flight. The generator is blamed only where its measured
    CPU says so (saturated, or crowding a full host); else it is cleared by its figures."""
    if not (knee.found and knee.p99_bends is False and knee.next_index is not None):
        return None
    text = (
        f"QPS stopped growing past {users_text(knee.users)} but P99 "
        f"{p99_change(knee.p99_bend or 0, 2)} at {users_text(knee.next_users)} instead of "
        "rising with the concurrency"
    )
    both = [rows[i] for i in (knee.index, knee.next_index) if i is not None]
    measured = [r for r in both if (r["generator"] or {}).get("measured")]
    blamed = [
        r
        for r in measured
        if (r["generator"].get("busiest_thread_demand") or 0) >= SATURATED_SHARE
        or _crowded(r["generator"], cpus)
    ]
    if blamed:
        r = blamed[0]
        return (
            f"{text}: the load generator's CPU says it was the limit ({_generator_text(r['users'], r['generator'])}): "
            "the requests were not all in flight; give it more CPU (locust --processes, "
            "another host) and sweep again"
        )
    if not measured:
        return (
            f"{text}; the load generator's CPU was not measured: check that it kept every "
            "user's request in flight"
        )
    r = measured[-1]
    flight = (
        f"; {r['in_flight']:.1f} requests were in flight at {users_text(r['users'])} (QPS x mean latency)"
        if r["in_flight"] is not None
        else ""
    )
    why = (
        "a P99 that falls as users are added is noise between the steps (a slow tail in one "
        "window, a busier host then)"
        if (knee.p99_bend or 0) < 1
        else "a client-side limit (a connection pool, think time) or noise between the steps"
    )
    return (
        f"{text}; not the load generator: {_generator_text(r['users'], r['generator'])} (below "
        f"the {SATURATED_SHARE:.0%} that marks it saturated){flight}: {why}; measure again "
        "with a longer --step-duration"
    )


def _setting(
    entry: Mapping[str, Any],
    reports: StepReports,
    compares: Mapping[str, Any],
    record: Mapping[str, Any],
) -> tuple[dict[str, Any], SettingOutcome]:
    steps = entry.get("steps", [])
    points = [step_point(s) for s in steps]
    knee = find_knee(points)
    band = bands(points, knee)
    rec = recommend(points, knee, record.get("sla_p99_ms"), record.get("peak_qps"))
    rows = [
        _step_row(s, p, b, reports.get((entry["slug"], int(s["users"]))))
        for s, p, b in zip(steps, points, band, strict=True)
    ]
    at = rows[knee.index]["verdict"] if knee.index is not None else None
    after = rows[knee.next_index]["verdict"] if knee.next_index is not None else None
    # the furthest step past the knee with a verdict: where the new bottleneck is plainest
    last = next(
        (
            i
            for i in range(len(rows) - 1, (knee.next_index or len(rows)) - 1, -1)
            if rows[i]["verdict"] and rows[i]["band"] in ("past", "errors")
        ),
        None,
    )
    knee_d = knee.to_dict()
    knee_d["verdict_at"] = at
    knee_d["verdict_after"] = after
    knee_d["last_users"] = rows[last]["users"] if last is not None else None
    knee_d["verdict_last"] = rows[last]["verdict"] if last is not None else None
    if knee.found:
        knee_d["text"] += (
            f". At the knee: {verdict_label(at)}; past it ({users_text(knee.next_users)}): "
            f"{verdict_label(after)}"
        )
        if last is not None and last != knee.next_index:
            knee_d["text"] += (
                f"; at {users_text(rows[last]['users'])}: {verdict_label(rows[last]['verdict'])}"
            )
    link = (
        f"knee/{entry['slug']}/compare.html"
        if isinstance(compares.get(entry["slug"]), dict)
        else None
    )
    caveats = _caveats(rows, record["load"]["tool"], (record.get("host") or {}).get("logical_cpus"))
    flat = _p99_flat_caveat(rows, knee, (record.get("host") or {}).get("logical_cpus"))
    if flat:
        caveats.append(flat)
    if entry.get("stopped_early"):
        caveats.append(f"this setting stopped early: {entry['stopped_early']}")
    out = {
        "name": entry["name"],
        "slug": entry["slug"],
        "var": entry.get("var"),
        "value": entry.get("value"),
        "baseline": False,
        "command": entry.get("command"),
        "env": entry.get("env") or {},
        "service": entry.get("service"),
        "stopped_early": entry.get("stopped_early"),
        "steps": rows,
        "knee": knee_d,
        "across_knee": _across(compares.get(entry["slug"]), link),
        "recommendation": rec.to_dict(),
        "caveats": caveats,
    }
    return out, SettingOutcome(entry["name"], knee, rec)


def build_sweep_report(
    record: Mapping[str, Any],
    reports: StepReports,
    compares: Mapping[str, Any] | None = None,
    path: str = "",
) -> dict[str, Any]:
    """The report dict. ``reports``: each step's report by (setting slug, users), None where
    it has none; ``compares``: the comparison across each setting's knee by slug (a dict),
    or why there is none (a string)."""
    compares = compares or {}
    settings, outcomes = [], []
    for entry in record.get("settings", []):
        s, o = _setting(entry, reports, compares, record)
        settings.append(s)
        outcomes.append(o)
    if settings:
        settings[0]["baseline"] = True
    best = best_setting(outcomes) if len(outcomes) > 1 else None
    chosen = (best or {}).get("best")
    if chosen is None and len(settings) == 1:
        chosen = 0
    caveats = []
    if record.get("state") != "complete":
        caveats.append(
            f"the sweep did not finish ({record.get('state')}"
            + (f": {record['end_reason']}" if record.get("end_reason") else "")
            + "): the report covers the steps it finished"
        )
    headline = _headline(settings, chosen, best)
    return {
        "schema": SWEEP_REPORT_SCHEMA,
        "tool_version": __version__,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sweep": {
            "path": path,
            "state": record.get("state"),
            "end_reason": record.get("end_reason"),
            "started": record.get("started"),
            "ended": record.get("ended"),
            "target": record.get("target"),
            "load": record.get("load"),
            "steps_requested": record.get("steps_requested"),
            "step_duration_s": record.get("step_duration_s"),
            "warmup_s": record.get("warmup_s"),
            "sla_p99_ms": record.get("sla_p99_ms"),
            "peak_qps": record.get("peak_qps"),
            "vary": record.get("vary"),
            "capture": record.get("capture"),
            "host": record.get("host"),
        },
        "headline": headline,
        "settings": settings,
        "best": best,
        "chosen": chosen,
        "capacity": settings[chosen]["recommendation"] if chosen is not None else None,
        "caveats": caveats,
        "method": {
            "gain_share": GAIN_SHARE,
            "p99_bend_share": P99_BEND_SHARE,
            "error_limit": ERROR_LIMIT,
            "safe_factor": SAFE_FACTOR,
            "noise": NOISE,
            "generator_saturated_share": SATURATED_SHARE,
        },
    }


def _headline(
    settings: list[dict[str, Any]], chosen: int | None, best: Mapping[str, Any] | None
) -> str:
    if not settings:
        return "no step was run"
    parts = []
    if best is not None:
        parts.append(best["text"][0].upper() + best["text"][1:])
    s = settings[chosen if chosen is not None else 0]
    prefix = f"{s['name']}: " if len(settings) > 1 else ""
    knee = s["knee"]["text"]
    parts.append(prefix + knee[0].upper() + knee[1:])
    rec = s["recommendation"]["text"]
    if rec:
        parts.append(rec[0][0].upper() + rec[0][1:])
    return ". ".join(p.rstrip(".") for p in parts) + "."
