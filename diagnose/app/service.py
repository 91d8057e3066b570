"""A bundle of a service's several workers: each worker judged, one verdict for the service.

``diagnose attach`` on a pre-fork master captures its workers side by side
(collect/workers.py): the busiest in the bundle itself, the others in ``workers/PID/``,
each a whole bundle, listed in ``workers.json``. Each of those is diagnosed as any bundle
is (analysis, rules: diagnose/app/report.py), and the report gets a ``service`` section: a row per worker
(its verdict, confidence and CPU) and the service's verdict over them
(:func:`diagnose.verdict.service.service_verdict`, weighted by CPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from diagnose.bundle.writer import WORKERS_MEMBER
from diagnose.errors import BadBundle
from diagnose.render.terminal import FIRST_SCREEN_FINDINGS
from diagnose.verdict.service import WorkerVerdict, finding_site, service_verdict

if TYPE_CHECKING:
    from diagnose.bundle.reader import Bundle
    from diagnose.render.schema import Report

#: another worker: its entry in workers.json, its report (None where its bundle cannot be
#: judged) and why not
Judged = tuple[dict[str, Any], "Report | None", str]


#: at most this many other workers are judged: diagnose writes at most 3
#: (collect/selection.py MAX_WORKERS), and a bundle from elsewhere may list thousands
MAX_OTHER_WORKERS = 15


def worker_entries(bundle: Bundle) -> list[dict[str, Any]]:
    """``workers.json``'s entries ([] for a bundle of one process, or a damaged list), the
    first :data:`MAX_OTHER_WORKERS`."""
    if not bundle.has(WORKERS_MEMBER):
        return []
    try:
        doc = bundle.json(WORKERS_MEMBER)
    except BadBundle:
        return []
    return [w for w in doc.get("workers", []) if isinstance(w, dict)][:MAX_OTHER_WORKERS]


def _row(pid: int, status: str, r: Report | None, why: str, this: bool) -> dict[str, Any]:
    if r is None:
        return {
            "pid": pid, "comm": "", "status": status, "reason": why, "this": this,
            "primary": None, "title": None, "kind": None, "confidence": None, "headline": "",
            "cpu_cores": None, "threads": None, "report": "", "tool_cpu_cores": None,
            "tool_window_cores": None,
        }  # fmt: skip
    v, m = r["verdict"], r["metrics"]
    return {
        "pid": pid,
        "comm": r["target"].get("comm", ""),
        "status": status,
        "reason": why,
        "this": this,
        "primary": v["primary"],
        "title": v["title"],
        "kind": v["kind"],
        "confidence": v["confidence"],
        "headline": v["headline"],
        "cpu_cores": m.get("process_cpu_cores"),
        "threads": m.get("threads_total"),
        "report": "" if this else f"workers/{pid}/report.html",
        "tool_cpu_cores": r["capture"].get("tool_cpu_cores"),
        "tool_window_cores": window_cores(r["capture"].get("tool_cpu_parts")),
    }


def window_cores(parts: object) -> float | None:
    """What a capture's diagnose used while its window was open, in cores: the sum of its
    ``tool_cpu_parts`` (``tool_cpu_cores`` also counts its start-up); None without them."""
    if not isinstance(parts, list) or not parts:
        return None
    cores: list[float] = []
    for part in parts:
        c = part.get("cores") if isinstance(part, dict) else None
        if not isinstance(c, (int, float)) or isinstance(c, bool):
            return None
        cores.append(float(c))
    return round(sum(cores), 3)


def service_section(main: Report, others: list[Judged]) -> dict[str, Any]:
    """The report's ``service``: a row per worker, busiest (this bundle's, ``main``) first,
    and the service's verdict; {} when the bundle holds one process."""
    if not others:
        return {}
    status = "ok" if main["bundle"].get("complete") else "partial"
    rows = [_row(int(main["target"].get("pid", 0)), status, main, "", True)]
    for entry, r, why in others:
        rows.append(_row(int(entry.get("pid", 0)), str(entry.get("status", "")), r, why, False))
    verdicts = [
        WorkerVerdict(
            pid=r["pid"],
            status=r["status"],
            primary=r["primary"],
            kind=r.get("kind"),
            confidence=float(r.get("confidence") or 0.0),
            cpu_cores=r.get("cpu_cores"),
            reason=r["reason"],
        )
        for r in rows
    ]
    verdict = service_verdict(verdicts)
    from diagnose.render.model import CATEGORY_TITLES  # pandas: not where a capture starts

    if verdict is not None:
        verdict["title"] = CATEGORY_TITLES.get(verdict["primary"], verdict["primary"])
    tool = [r["tool_cpu_cores"] for r in rows if r["tool_cpu_cores"] is not None]
    # the windows' figure only where every capture counted has one: a part is not the whole
    window = [r["tool_window_cores"] for r in rows if r["tool_cpu_cores"] is not None]
    whole = bool(window) and all(w is not None for w in window)
    reports = [(rows[0]["pid"], True, main)] + [
        (int(e.get("pid", 0)), False, r) for e, r, _why in others if r is not None
    ]
    return {
        "workers": rows,
        "verdict": verdict,
        "findings": merged_findings(reports),
        "tool_cpu_cores": round(sum(tool), 3) if tool else None,
        "tool_cpu_window_cores": round(sum(window), 3) if whole else None,
    }


#: a worker's finding at or above this score is shown for the service, on the first screen,
#: with each worker's leading one whatever its score
SHOWN_SCORE = 0.5
#: and, among the findings the worker's own first screen shows, those scoring at least this
#: share of its lead: a neighbour that takes the cores lowers every score, not the ranking
CLOSE_TO_LEAD = 0.5


def merged_findings(reports: list[tuple[int, bool, Report]]) -> list[dict[str, Any]]:
    """Every worker's leading finding (its verdict), its others scored at least
    :data:`SHOWN_SCORE` and those of its first screen close to its lead, one entry per rule
    and site (the code it names: a lock's waiting line, the top preprocessing function ...),
    with the workers it holds in, strongest first. Each entry keeps the summary and first
    fix of the worker where it scored highest, and links each worker's page."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for pid, this, r in reports:
        main = [f for f in r.get("findings") or [] if not f.get("advisory")]
        lead = main[0].get("score") if main else None
        close = CLOSE_TO_LEAD * lead if isinstance(lead, (int, float)) else SHOWN_SCORE
        for i, f in enumerate(main):
            score = f.get("score")
            if not isinstance(score, (int, float)):
                continue
            on_first_screen = i < FIRST_SCREEN_FINDINGS and score >= close
            if not (i == 0 or score >= SHOWN_SCORE or on_first_screen):
                continue
            site = finding_site(f)
            entry = merged.get((str(f.get("id")), site))
            if entry is None or score > entry["score"]:
                fixes = f.get("fixes") or []
                entry = {
                    "id": f.get("id"), "title": f.get("title"), "category": f.get("category"),
                    "kind": f.get("kind"), "score": score, "site": site,
                    "summary": f.get("summary", ""), "fix": fixes[0] if fixes else "",
                    "workers": (entry or {}).get("workers", []),
                }  # fmt: skip
                merged[(str(f.get("id")), site)] = entry
            entry["workers"].append(
                {"pid": pid, "score": score, "page": "" if this else f"workers/{pid}/report.html"}
            )
    return sorted(merged.values(), key=lambda e: -float(e["score"]))
