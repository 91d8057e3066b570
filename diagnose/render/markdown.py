"""Markdown: the verdict, evidence and fixes, pasteable into a ticket."""

from __future__ import annotations

import shlex

from diagnose.render.env import environment
from diagnose.render.schema import Report
from diagnose.render.text import md, md_code, pct, short_frame


def render_markdown(report: Report) -> str:
    env = environment(autoescape=False)
    tmpl = env.get_template("report.md.j2")
    findings = report.get("findings", [])
    cmd = report.get("capture", {}).get("command") or []
    text = tmpl.render(
        r=report,
        v=report["verdict"],
        main_findings=[f for f in findings if not f.get("advisory")][:5],
        advisories=[f for f in findings if f.get("advisory")],
        not_measured=report.get("not_measured", []),
        md=md,
        md_code=md_code,
        short=short_frame,
        pct=pct,
        command=" ".join(shlex.quote(str(c)) for c in cmd),
    )
    # collapse runs of blank lines left by template conditionals
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip() == "" and lines and lines[-1].strip() == "":
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"
