"""Making text the target controls safe to show: thread names, function names, paths.

The target chooses these strings (``threading.Thread(name="<script>...")``, ANSI escapes, a
newline in a function name). HTML escaping is jinja2's autoescape; here is what terminals
and Markdown need.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~])")


def plain(s: object, limit: int = 300) -> str:
    """One line with no control characters (escape sequences shown as \\xNN), bounded."""
    text = "" if s is None else str(s)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def md(s: object, limit: int = 300) -> str:
    """Safe as Markdown text: special characters backslash-escaped, HTML inert."""
    return _MD_SPECIAL.sub(r"\\\1", plain(s, limit))


def md_code(s: object, limit: int = 300) -> str:
    """Safe as a Markdown code span."""
    text = plain(s, limit).replace("`", "'")
    return f"`{text}`" if text else ""


def short_frame(frame: object, limit: int = 120) -> str:
    """'name (/long/path/to/file.py:12)' -> 'name (file.py:12)' for labels."""
    text = plain(frame, 10_000)
    m = re.match(r"^(.*) \((.*)\)$", text)
    if m:
        name, loc = m.group(1), m.group(2)
        base = loc.rsplit("/", 1)[-1]
        text = f"{name} ({base})"
    return plain(text, limit)
