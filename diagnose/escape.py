"""One escaping function per output kind, for every value a bundle or a target controls.

Thread names, function and file names, command lines, ``comm``, and every field of a bundle
someone else made (the manifest's ``pid`` may be a string holding Markdown) are text an
attacker chose. Each output kind has exactly one function here, and the renderers apply it
by construction, not by remembering:

- terminal: :func:`term` (no control characters: escape sequences are shown as ``\\xNN``;
  one bounded line). ``render/terminal.py`` passes every line it prints through it, colour
  is added afterwards.
- Markdown: :func:`md` (text) and :func:`md_code` (a code span). The Markdown jinja2
  environment's ``finalize`` hook (:func:`md_finalize`) applies :func:`md` to every
  ``{{ ... }}`` that is not already escaped, so a template that forgets a filter is still safe.
- HTML: :func:`html`, which is jinja2's autoescape (markupsafe); HTML templates render
  with autoescape on. Plotly's own label markup: :func:`plotly_text`.
- CSV: :func:`csv_cell` for text cells of tables people open in spreadsheets (a leading
  ``'`` before ``= + - @``, tab, CR and ``'`` itself, so no cell is a formula);
  :func:`csv_uncell` undoes it exactly when the bundle is read back.

New templates and fields need nothing more than these: print values with ``{{ }}`` (the
environment escapes them) and pass ``md_code``/``md`` only to choose the form or a length.
``tests/unit/test_escaping_model.py`` renders every template with hostile text in every
field of the report and comparison models (built by walking the real ones), so a new field
is covered without a new test.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

import markupsafe

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# Markdown's inline syntax; "_" between two letters or digits never starts emphasis in
# CommonMark/GFM, so snake_case names stay readable (and pasteable where "\_" shows as is)
_MD_SPECIAL = re.compile(r"([\\`*{}\[\]<>|~&])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# what would start a block at a line's start: a heading, a list item, a thematic break or
# a setext underline (quotes, fences and tables start with characters escaped above)
_MD_BLOCK_START = re.compile(r"^(\s*)(?:(?:#{1,6}|[-+])(?=\s|$)|(?=[=-]+\s*$))")
_MD_ORDERED = re.compile(r"^(\s*\d{1,9})([.)])(?=\s|$)")


class Markdown(str):
    """Text already escaped for Markdown: :func:`md_finalize` leaves it as it is."""

    __slots__ = ()


def term(s: object, limit: int = 300) -> str:
    """Terminal: one line with no control characters (escape sequences shown as \\xNN),
    at most ``limit`` characters."""
    text = "" if s is None else str(s)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def md(s: object, limit: int = 300) -> Markdown:
    """Markdown text: special characters backslash-escaped, HTML inert, nothing that would
    start a block at the start of the line, one line."""
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), term(s, limit))
    m = _MD_BLOCK_START.match(text)
    if m:
        text = f"{m.group(1)}\\{text[m.end(1) :]}"
    else:
        text = _MD_ORDERED.sub(r"\1\\\2", text, count=1)
    return Markdown(text)


def md_code(s: object, limit: int = 300, table: bool = False) -> Markdown:
    """Markdown code span; ``table``: inside a table cell, where a bare ``|`` would end the
    cell even within backticks."""
    text = term(s, limit).replace("`", "'")
    if table:
        text = text.replace("|", "\\|")
    return Markdown(f"`{text}`" if text else "")


def md_finalize(value: Any) -> str:
    """jinja2 ``finalize`` for Markdown templates: every printed value is escaped unless it
    is :class:`Markdown` already; numbers and booleans print as they are."""
    if isinstance(value, Markdown):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    return md(value, 2000)


def html(s: object) -> markupsafe.Markup:
    """HTML text and attribute values (what jinja2's autoescape does)."""
    return markupsafe.escape("" if s is None else s)


def plotly_text(s: object, limit: int = 300) -> str:
    """Text in a plotly figure (labels, hover, ticks): plotly.js reads a small HTML dialect
    (``<b>``, ``<br>``, ``<a href>``) and decodes ``&amp;``, ``&lt;`` and ``&gt;`` (not
    ``&quot;``): with no ``<`` left, no tag can form."""
    return _html.escape(term(s, limit), quote=False)


#: what makes a spreadsheet read a cell as a formula (OWASP's list), and the guard itself
CSV_GUARD = "'"
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", CSV_GUARD)


def csv_cell(value: Any) -> Any:
    """A CSV cell for a table people open in a spreadsheet: text starting with ``=``, ``+``,
    ``-``, ``@``, a tab or CR gets a leading ``'`` (so does text starting with ``'``, which
    keeps the guard reversible). Numbers are left alone."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return CSV_GUARD + value
    return value


def csv_uncell(value: Any) -> Any:
    """The text :func:`csv_cell` was given (bundles that declare guarded CSV cells)."""
    if isinstance(value, str) and value.startswith(CSV_GUARD):
        return value[len(CSV_GUARD) :]
    return value
