"""Making text the target controls safe to show: thread names, function names, paths.

The target chooses these strings (``threading.Thread(name="<script>...")``, ANSI escapes, a
newline in a function name). HTML escaping is jinja2's autoescape; here is what terminals,
Markdown and plotly's text need.
"""

from __future__ import annotations

import html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# Markdown's inline syntax; "_" between two letters or digits never starts emphasis in
# CommonMark/GFM, so snake_case names stay readable (and pasteable where "\_" shows as is)
_MD_SPECIAL = re.compile(r"([\\`*{}\[\]<>|~&])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# what would start a block (heading, quote, list item, setext underline) at a line's start
_MD_BLOCK_START = re.compile(r"^(\s*)([#+=-])|^(\s*\d+)([.)])(?=\s|$)")


def plain(s: object, limit: int = 300) -> str:
    """One line with no control characters (escape sequences shown as \\xNN), bounded."""
    text = "" if s is None else str(s)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def md(s: object, limit: int = 300) -> str:
    """Safe as Markdown text: special characters backslash-escaped, HTML inert, nothing that
    would start a block at the start of the line."""
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), plain(s, limit))
    return _MD_BLOCK_START.sub(
        lambda m: f"{m.group(1)}\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\{m.group(4)}",
        text,
        count=1,
    )


def md_code(s: object, limit: int = 300, table: bool = False) -> str:
    """Safe as a Markdown code span; ``table``: inside a table cell, where a bare ``|``
    would end the cell even within backticks."""
    text = plain(s, limit).replace("`", "'")
    if table:
        text = text.replace("|", "\\|")
    return f"`{text}`" if text else ""


def plotly_text(s: object, limit: int = 300) -> str:
    """Safe as text in a plotly figure (labels, hover, ticks): plotly.js reads a small HTML
    dialect (``<b>``, ``<br>``, ``<a href>``) and decodes ``&amp;``, ``&lt;`` and ``&gt;``
    (not ``&quot;``): with no ``<`` left, no tag can form."""
    return html.escape(plain(s, limit), quote=False)


def short_frame(frame: object, limit: int = 120) -> str:
    """'name (/long/path/to/file.py:12)' -> 'name (file.py:12)' for labels."""
    text = plain(frame, 10_000)
    m = re.match(r"^(.*) \((.*)\)$", text)
    if m:
        name, loc = m.group(1), m.group(2)
        base = loc.rsplit("/", 1)[-1]
        text = f"{name} ({base})"
    return plain(text, limit)


def pct(x: object, digits: int = 0) -> str:
    """A share (0..1) as a percentage; ``n/a`` when it was not measured; a share too small
    to show at this precision is ``<1%`` (or ``<0.1%``), not ``0%``."""
    if x is None:
        return "n/a"
    v = float(x) * 100  # type: ignore[arg-type]
    text = f"{v:.{digits}f}"
    if v > 0 and float(text) == 0:
        return f"<{10.0**-digits:.{digits}f}%"
    return f"{text}%"


_ENDED = {
    "duration": "ran its full duration",
    "target_exited": "ended early: the target exited",
    "disk_budget": "ended early: the bundle reached --max-bundle-mb",
    "disk_full": "ended early: the disk filled up",
}
_SIGNALS = {"SIGINT": "SIGINT, Ctrl-C", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP"}


def ended(ended_by: object) -> str:
    """How a capture ended, in words, from the manifest's ``capture.ended_by``
    ("duration" -> "ran its full duration", "interrupted (SIGINT)" -> "ended early:
    interrupted (SIGINT, Ctrl-C)"). Plain text: escape it for the output format."""
    value = plain(ended_by, 60)
    if ended_by is None or value == "":
        return "its end was not recorded (the capture did not finish)"
    if value in _ENDED:
        return _ENDED[value]
    m = re.fullmatch(r"interrupted \((\w+)\)", value)
    if m:
        return f"ended early: interrupted ({_SIGNALS.get(m.group(1), m.group(1))})"
    return f"ended: {value}"
