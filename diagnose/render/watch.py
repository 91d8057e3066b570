"""Watch, history and fleet for people: terminal lines, and the history and fleet pages.

The models are plain dicts (diagnose/watch/history.py, fleet.py); the templates display
them. Text the target controls (its command name, the verdict's headline quoting its
functions, a store's paths) goes through ``term`` on the terminal, jinja2's autoescape in
HTML and ``md`` in Markdown, as in the other reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from diagnose.escape import md, md_code, term
from diagnose.render.text import pct, plain

# the pages' modules (jinja2, and pandas through render.html) are imported where a page is
# drawn: ``diagnose watch`` prints its lines without them and starts capturing sooner


def when(iso: str) -> str:
    """``2026-05-01 12:00:03`` (local time) from an ISO 8601 timestamp."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, TypeError):
        return term(iso, 40)


def verdict_text(category: Any, kind: Any, confidence: Any = None) -> str:
    label = f"{category}/{kind}" if kind else str(category)
    return label + ("" if confidence is None else f" {float(confidence) * 100:.0f}%")


def size(n: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def stored_line(
    row: Mapping[str, Any] | None,
    removed: int = 0,
    note: str = "",
    latency: str = "",
    comparison: str = "",
    changed: bool | None = None,
) -> str:
    """One line per capture of ``diagnose watch`` (``row``: the index's row, None for a
    turn that was skipped): time, verdict, confidence, what was kept, then the service's
    P99 in words (``latency``) and the comparison a drift was kept with. ``changed``: the
    verdict changed (None: a capture kept whole without a drift did)."""
    if row is None:
        return term(f"{datetime.now():%Y-%m-%d %H:%M:%S}  {note}", 300)
    verdict = verdict_text(row["category"], row["kind"], row["confidence"])
    drift = bool(row.get("drift"))
    if changed is None:
        changed = bool(row["kept_whole"]) and not drift
    why = [w for w, on in (("verdict changed", changed), ("latency drift", drift)) if on]
    kept = f"kept whole ({', '.join(why)})" if row["kept_whole"] else "report.json kept"
    parts = [when(row["started"]), f"{verdict:<28}", f"{kept}, {size(row['bytes'])}"]
    if row["ended_by"] and row["ended_by"] != "duration":
        parts.append(f"[{row['ended_by']}]")
    if removed:
        parts.append(f"retention removed {removed} old")
    if latency:
        parts.append(latency + (f": {comparison}" if comparison else ""))
    return term("  ".join(parts), 1000)


# --- history -----------------------------------------------------------------------------


def render_history_text(h: Mapping[str, Any]) -> str:
    """The timeline: one line per run of captures with the same verdict, oldest first."""
    out = [term(f"Store {h['store']}: {len(h['captures'])} captures", 400)]
    for b in h["bands"]:
        conf = b.get("confidence")
        line = (
            f"{when(b['from'])} .. {when(b['to'])}  "
            f"{verdict_text(b['category'], b['kind']):<26} {b['captures']:>4} capture(s)"
            + ("" if conf is None else f", confidence {pct(conf)}")
        )
        out.append(term(line, 300))
        if b.get("headline"):
            out.append("    " + term(b["headline"], 200))
    if not h["bands"]:
        out.append("no captures yet")
    drifts = [c for c in h["captures"] if c.get("drift")]
    if drifts:
        out.append(f"Latency drifts ({len(drifts)}):")
    for c in drifts:
        link = f": {c['comparison_link']}" if c.get("comparison_link") else ""
        out.append(term(f"{when(c['started'])}  capture {c['id']}  {c['latency']}{link}", 600))
    return "\n".join(out) + "\n"


def render_history_html(h: Mapping[str, Any]) -> str:
    from diagnose.render.html import render_page
    from diagnose.render.sweep import CATEGORY_COLORS

    return render_page(
        "history.html.j2", [], h=h, plain=plain, pct=pct, when=when, size=size,
        verdict_text=verdict_text, colors=CATEGORY_COLORS,
    )  # fmt: skip


# --- fleet -------------------------------------------------------------------------------


def _fleet_context(f: Mapping[str, Any]) -> dict[str, Any]:
    from diagnose.render.sweep import CATEGORY_COLORS

    return {"f": f, "pct": pct, "verdict_text": verdict_text, "colors": CATEGORY_COLORS,
            "num": _num}  # fmt: skip


def _num(x: Any) -> str:
    if x is None:
        return "n/a"
    return f"{float(x):.3g}"


def render_fleet_markdown(f: Mapping[str, Any]) -> str:
    from diagnose.render.env import environment

    env = environment(autoescape=False)
    text = env.get_template("fleet.md.j2").render(
        **_fleet_context(f), md=md, md_code=md_code, md_cell=md
    )
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_fleet_html(f: Mapping[str, Any]) -> str:
    from diagnose.render.html import render_page

    return render_page("fleet.html.j2", [], **_fleet_context(f), plain=plain)


def render_fleet_text(f: Mapping[str, Any]) -> str:
    """The verdict distribution, the odd pods and why, then one row per pod."""
    out = [term(f["headline"], 600), ""]
    for d in f["distribution"]:
        out.append(term(f"{d['count']:>4}  {verdict_text(d['category'], d['kind'])}", 200))
    out.append("")
    out.append(f"{'pod':<32} {'verdict':<28} {'odd':<4} why")
    for p in f["pods"]:
        why = "; ".join(p["why"]) or "-"
        row = (
            f"{term(p['name'], 32):<32} "
            f"{verdict_text(p['category'], p['kind'], p['confidence']):<28} "
            f"{'YES' if p['odd'] else '':<4} {why}"
        )
        out.append(term(row, 400))
    return "\n".join(out) + "\n"
