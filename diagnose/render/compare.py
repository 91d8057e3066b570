"""The comparison of two bundles (diagnose/app/compare.py) as Markdown, HTML and a terminal summary.

Like the report: the templates display the comparison dict and nothing else; everything the
targets control (frames, thread names, command lines, paths) goes through ``md``/``md_code``
in Markdown, jinja2's autoescape in HTML, and ``plain`` on the terminal. The differential
flame graphs travel as JSON in a ``<script type="application/json">`` element and are drawn by
the inlined plotly, whose labels are escaped again for plotly's own HTML-like markup.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.render.env import environment
from diagnose.render.html import plotly_js, render_page, static_text
from diagnose.render.terminal import finish
from diagnose.render.text import md, md_code, plain, short_frame
from diagnose.verdict.outcome import FIGURE_NOISE, OUTCOME_WORDS

JUDGED = ("better", "worse", "moved")


def stack_label(stack: list[str], limit: int = 3) -> str:
    """'lock wait > thread: handler-N > ... > worker (_harness.py) > handle (x.py)'."""
    head = [f for f in stack if f.endswith(" wait") or f.startswith("thread: ")][:2]
    rest = [f for f in stack if f not in head]
    tail = [short_frame(f, 80) for f in rest[-limit:]]
    parts = head + (["…"] if len(rest) > limit else []) + tail
    return " > ".join(parts)


def _context(c: dict[str, Any]) -> dict[str, Any]:
    rows = c["metrics"]
    return {
        "c": c,
        "judged": [m for m in rows if m["change"] in JUDGED],
        "changed": [m for m in rows if m["change"] in ("changed", "new", "gone")],
        "same": [m for m in rows if m["change"] == "same"],
        "stack_label": stack_label,
        "short": short_frame,
        "figure_noise": FIGURE_NOISE,
        "how_to_give": HOW_TO_GIVE,
    }


def render_compare_markdown(c: dict[str, Any]) -> str:
    env = environment(autoescape=False)
    text = env.get_template("compare.md.j2").render(
        **_context(c),
        md=md,
        md_code=md_code,
        md_code_cell=lambda s, limit=300: md_code(s, limit, table=True),
    )
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"  # runs of blank lines -> one


def render_compare_html(c: dict[str, Any]) -> str:
    """The same page machinery as the report: inlined plotly, a hashed-script CSP."""
    return render_page(
        "compare.html.j2", [plotly_js(), static_text("compare.js")], **_context(c), plain=plain
    )


#: Where the service's figures come from, said where a comparison has none.
HOW_TO_GIVE = (
    "give diagnose compare --before-load/--after-load (a load generator's stats file) "
    "or --before-qps/--after-qps"
)


def service_line(c: dict[str, Any]) -> str:
    """'Service: improved: throughput ... (better)' or why compare cannot say."""
    s = c.get("service") or {}
    if not s.get("rows"):
        return f"Service: {plain(s.get('text', 'no figures'), 4000)} ({HOW_TO_GIVE})"
    items = "; ".join(
        f"{plain(r['label'])} {plain(r['display_before'])} → {plain(r['display_after'])}"
        + (f" ({r['change']})" if r["change"] in ("better", "worse") else "")
        for r in s["rows"]
    )
    src = f"{plain(s['before']['source'], 200)} / {plain(s['after']['source'], 200)}"
    return f"Service: {OUTCOME_WORDS.get(s['outcome'], 'unknown')}: {items} [{src}]"


_CHANGE_WORDS = {"better": "Better", "worse": "Worse", "moved": "Moved (not worse)"}


def render_compare_summary(c: dict[str, Any], path: str | None = None) -> str:
    """A few lines for the terminal: the service's figures, the verdict change in words,
    what moved which way, hotter/colder."""
    v = c["verdict"]
    out = [service_line(c), f"Verdict: {plain(v.get('words') or v['text'], 4000)}"]
    out.append(f"  ({plain(v['text'], 4000)})")
    out += [f"Caveat: {plain(w, 4000)}" for w in c.get("caveats", [])]
    for change in JUDGED:
        rows = [m for m in c["metrics"] if m["change"] == change][:4]
        if rows:
            items = "; ".join(
                f"{plain(m['name'], 100)} {plain(m['display_before'])} → {plain(m['display_after'])}"
                + (
                    f" (per request {plain(m['display_per_request'])})"
                    if m.get("display_per_request")
                    else ""
                )
                for m in rows
            )
            out.append(f"{_CHANGE_WORDS[change]}: {items}")
    f = c["findings"]
    for key, what in (("disappeared", "Findings gone"), ("appeared", "Findings new")):
        if f[key]:
            out.append(
                f"{what}: "
                + "; ".join(
                    plain(x["title"]) + (f" at {plain(x['site'], 4000)}" if x.get("site") else "")
                    for x in f[key]
                )
            )
    for view in c["flames"].values():
        for key in ("colder", "hotter"):
            if view[key]:
                top = view[key][0]
                out.append(
                    f"{key.capitalize()} ({plain(view['title'])}): {plain(stack_label(top['stack']), 4000)}"
                    f" {top['before']:.2f} → {top['after']:.2f} {plain(view['unit'])}"
                )
    if path:
        out.append(f"Comparison: {plain(path, 1000)}")
    return "\n".join(finish(out))
