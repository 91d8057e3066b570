"""The sweep report (diagnose/sweep/model.py) as Markdown, HTML, and lines for the terminal.

Like the report and the comparison: the templates display the dict and nothing else. Text
from outside diagnose (setting values, the generator's error messages, findings that quote
the target's frames) goes through ``md`` in Markdown, jinja2's autoescape in HTML, ``plain``
on the terminal; the charts' data travels as JSON in a ``<script type="application/json">``
element and templates/sweep.js escapes it again for plotly's HTML-like labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from diagnose.render.env import environment
from diagnose.render.html import plotly_js, render_page, static_text
from diagnose.render.text import md, md_code, pct, plain
from diagnose.verdict.service import lead_verdict

#: Band colours by verdict category (as the terminal's), for the charts and the tables.
CATEGORY_COLORS = {
    "preprocess": "#ae3ec9",
    "lock": "#e03131",
    "scheduling": "#f08c00",
    "compute": "#1971c2",
    "memory_bandwidth": "#0c8599",
    "io": "#2f9e44",
    "idle": "#adb5bd",
    "unknown": "#868e96",
}
BAND_TITLES = {
    "below": "below the knee",
    "knee": "the knee",
    "past": "past the knee",
    "saturated": "generator saturated",
    "errors": "errors",
    "failed": "failed",
}


def num(x: Any, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    return f"{float(x):,.{digits}f}"


def gen_cpu(g: Mapping[str, Any] | None) -> str:
    """'0.21 (52%)': the generator's cores, and its busiest thread's demand for a core."""
    if not g or not g.get("measured"):
        return "n/a"
    return f"{g['cpu_cores']:.2f} ({g['busiest_thread_demand']:.0%})" + (
        " SATURATED" if g.get("saturated") else ""
    )


def verdict_short(v: Mapping[str, Any] | None) -> str:
    if not v:
        return "no verdict"
    conf = v.get("confidence")
    return f"{v.get('label')}" + ("" if conf is None else f" {conf * 100:.0f}%")


def _context(m: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "m": m,
        "s": m["sweep"],
        "num": num,
        "pct": pct,
        "gen_cpu": gen_cpu,
        "verdict_short": verdict_short,
        "band_titles": BAND_TITLES,
        "colors": CATEGORY_COLORS,
    }


def render_sweep_markdown(m: Mapping[str, Any]) -> str:
    env = environment(autoescape=False)
    text = env.get_template("sweep.md.j2").render(
        **_context(m),
        md=md,
        md_code=md_code,
        md_cell=md,  # md escapes "|" too: a value cannot end a table cell
    )
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def render_sweep_html(m: Mapping[str, Any]) -> str:
    return render_page(
        "sweep.html.j2", [plotly_js(), static_text("sweep.js")], **_context(m), plain=plain
    )


# --- the terminal ----------------------------------------------------------------------------

_COLUMNS = ("users", "QPS", "P50 ms", "P95 ms", "P99 ms", "errors", "gen CPU", "verdict")


def table_header(with_setting: bool) -> str:
    head = f"{'users':>6} {'QPS':>8} {'P50 ms':>7} {'P95 ms':>7} {'P99 ms':>7} {'errors':>7} {'gen CPU':>11}  verdict"
    return (f"{'setting':<22} " if with_setting else "") + head


def step_line(
    step: Mapping[str, Any], report: Mapping[str, Any] | None, setting: str | None = None
) -> str:
    """One row of the table printed as the sweep runs (from the record and the step report)."""
    from diagnose.sweep.loadgen import LoadFigures
    from diagnose.sweep.model import verdict_label

    prefix = f"{plain(setting, 22):<22} " if setting is not None else ""
    load = step.get("load")
    if not load:
        return (
            prefix
            + f"{step['users']:>6} {step['status'].upper()}: {plain(step.get('reason'), 160)}"
        )
    f = LoadFigures.from_dict(load)
    v = lead_verdict(report) if report else None
    verdict = "no verdict" if not v else f"{verdict_label(v)} {v['confidence'] * 100:.0f}%"
    if step.get("status") not in ("ok", None):
        verdict += f" [{step['status']}]"
    return prefix + (
        f"{step['users']:>6} {f.qps:>8.1f} {num(f.p50_ms, 1):>7} {num(f.p95_ms, 1):>7} "
        f"{num(f.p99_ms, 1):>7} {f.error_rate:>7.1%} {gen_cpu(step.get('generator')):>11}  "
        f"{plain(verdict, 80)}"
    )


def render_sweep_summary(m: Mapping[str, Any], path: str | None = None) -> str:
    """The lines after the table: knee, what changed across it, recommendations, best."""
    out = []
    multi = len(m["settings"]) > 1
    for s in m["settings"]:
        who = f"[{plain(s['name'], 60)}] " if multi else ""
        out.append(f"{who}Knee: {plain(s['knee']['text'], 4000)}")
        a = s.get("across_knee")
        if a and not a.get("error"):
            moved = "; ".join(
                f"{x['name']} {plain(x['before'])} → {plain(x['after'])}" for x in a["metrics"][:4]
            )
            out.append(
                f"{who}Across the knee: {plain(a['verdict'], 4000)}"
                + (f"; {moved}" if moved else "")
            )
        elif a:
            out.append(f"{who}Across the knee: {plain(a['error'], 4000)}")
        for c in s["caveats"]:
            out.append(f"{who}Caveat: {plain(c, 4000)}")
    if m.get("best"):
        out.append(f"Best setting: {plain(m['best']['text'], 4000)}")
    if m.get("capacity"):
        name = m["settings"][m["chosen"]]["name"] if multi and m.get("chosen") is not None else None
        out.append("Recommendation" + (f" ({plain(name, 60)})" if name else "") + ":")
        out += [f"  - {plain(t, 4000)}" for t in m["capacity"]["text"]]
    out += [f"Caveat: {plain(c, 4000)}" for c in m.get("caveats", [])]
    if path:
        out.append(f"Sweep report: {plain(path, 1000)}")
    return "\n".join(out)
