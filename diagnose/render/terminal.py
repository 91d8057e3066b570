"""The summary printed after a capture: verdict, top findings, what was not measured."""

from __future__ import annotations

from typing import Any

import click

from diagnose.render.text import plain

_COLORS = {
    "preprocess": "magenta",
    "lock": "red",
    "scheduling": "yellow",
    "compute": "blue",
    "memory_bandwidth": "cyan",
    "io": "green",
    "idle": "white",
    "unknown": "white",
}


def render_summary(
    report: dict[str, Any], report_path: str | None = None, color: bool = False
) -> str:
    v = report["verdict"]
    lines = []
    head = f"{v['title']}{' (' + v['kind'] + ')' if v.get('kind') else ''}"
    conf = f"confidence {v['confidence'] * 100:.0f}%"
    verdict_line = f"Verdict: {head}, {conf}"
    if color:
        verdict_line = click.style(verdict_line, fg=_COLORS.get(v["primary"], "white"), bold=True)
    lines.append(verdict_line)
    t = report["target"]
    lines.append(
        plain(
            f"  target PID {t.get('pid')} ({t.get('comm')}), {report['capture'].get('duration_actual', 0):.1f} s, "
            f"ended by {report['capture'].get('ended_by')}"
        )
    )
    if t.get("note"):
        lines.append("  " + plain(t["note"], 400))
    main = [f for f in report["findings"] if not f.get("advisory")][:3]
    if not main:
        lines.append("  " + plain(v["headline"], 400))
    for i, f in enumerate(main, 1):
        lines.append(
            f"{i}. {plain(f['title'])} [{f['category']}{'/' + f['kind'] if f.get('kind') else ''}, score {f['score']:.2f}]"
        )
        lines.append(f"   evidence: {plain(f['summary'], 400)}")
        if f.get("fixes"):
            lines.append(f"   first fix: {plain(f['fixes'][0], 400)}")
    adv = [f for f in report["findings"] if f.get("advisory")]
    for f in adv[:2]:
        lines.append(f"   also: {plain(f['title'])}: {plain(f['summary'], 200)}")
    nm = [n for n in report.get("not_measured", []) if n["status"] != "ok"]
    if nm:
        lines.append("Not measured:")
        for n in nm:
            lines.append(f"  - {n['collector']} ({n['status']}): {plain(n['reason'], 300)}")
    if report.get("broken_rules"):
        lines.append(f"Broken rules skipped: {len(report['broken_rules'])} (see the report)")
    if report_path:
        lines.append(f"Report: {report_path}")
    return "\n".join(lines)
