"""HTML: one self-contained file (no CDN, nothing fetched) drawn from the report dict.

- jinja2 autoescaping is on for every string the templates print;
- the data the charts draw travels as JSON inside a ``<script type="application/json">``
  element (``tojson`` escapes ``<``, ``>``, ``&`` and ``'``), read with ``JSON.parse``;
- the page's only scripts are plotly.js (inlined once) and templates/html/report.js; the
  Content-Security-Policy allows exactly those two by their SHA-256 hashes, so even markup
  that slipped through escaping could not run script, and the page can fetch nothing.

:func:`render_page` is the reusable part (other pages, e.g. a comparison of two bundles,
render their own template with the same scripts and policy).
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from typing import Any

from diagnose.render.charts import MIN_SHARE
from diagnose.render.env import environment
from diagnose.render.schema import Report
from diagnose.render.text import pct, plain, short_frame

REPORT_JS = "html/report.js"
#: plotly.js with only the traces the reports draw (icicle, heatmap, bar, scatter): 1.3 MB
#: against 4.8 MB for the full bundle; rebuilt by tools/plotly/build.sh
PLOTLY_JS = "vendor/plotly.min.js"


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """plotly.js as shipped with diagnose (no network)."""
    return static_text(PLOTLY_JS)


def static_text(name: str) -> str:
    """A file under templates/ as it is (scripts, styles)."""
    env = environment(autoescape=True)
    assert env.loader is not None
    source, _, _ = env.loader.get_source(env, name)
    return source


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(scripts: list[str]) -> str:
    """Nothing may load from anywhere; only these inline scripts run."""
    hashes = " ".join(_sha256(s) for s in scripts)
    return (
        "default-src 'none'; "
        f"script-src {hashes}; "
        "style-src 'unsafe-inline'; "
        "img-src data: blob:; "
        "font-src data:; "
        "connect-src 'none'; "
        "base-uri 'none'; "
        "form-action 'none'"
    )


def render_page(template: str, scripts: list[str], **context: Any) -> str:
    """Render an HTML template that places ``scripts`` (in order) as inline ``<script>``
    elements and ``csp`` in its Content-Security-Policy meta tag."""
    for s in scripts:
        if "</script" in s.lower():
            raise ValueError("an inline script may not contain '</script'")
    env = environment(autoescape=True)
    tmpl = env.get_template(template)
    return tmpl.render(scripts=scripts, csp=content_security_policy(scripts), **context)


#: What a badge's colour says: how much a finding calls for action, whatever its category
#: (an I/O verdict in green read as healthy). Shown in the page's legend.
SEVERITIES = {
    "high": "the bottleneck (score 0.5 or more)",
    "medium": "a weaker candidate",
    "low": "advisory",
    "info": "nothing to fix (idle, or no bottleneck named)",
}


def severity(category: str, score: float | None, advisory: bool = False) -> str:
    """A finding's (or the verdict's, from its confidence) severity: a key of SEVERITIES."""
    if category in ("idle", "unknown"):
        return "info"
    if advisory:
        return "low"
    return "high" if (score or 0) >= 0.5 else "medium"


def render_html(report: Report, charts: dict[str, Any]) -> str:
    return render_page(
        "report.html.j2",
        [plotly_js(), static_text(REPORT_JS)],
        r=report,
        v=report["verdict"],
        charts=charts,
        plain=plain,
        short=short_frame,
        pct=pct,
        min_share=MIN_SHARE,
        severity=severity,
        severities=SEVERITIES,
    )
