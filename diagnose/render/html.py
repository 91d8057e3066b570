"""HTML: one self-contained file (no CDN, nothing fetched) drawn from the report dict.

jinja2 autoescaping is on for every string; data for the charts travels as JSON inside a
``<script type="application/json">`` element (``tojson`` escapes ``<``, ``>`` and ``&``),
so nothing the target names can become markup or script.
"""

from __future__ import annotations

from typing import Any

from diagnose.render.env import environment
from diagnose.render.text import plain, short_frame


def render_html(report: dict[str, Any], charts: dict[str, Any]) -> str:
    env = environment(autoescape=True)
    tmpl = env.get_template("report.html.j2")
    return tmpl.render(r=report, v=report["verdict"], charts=charts, plain=plain, short=short_frame)
