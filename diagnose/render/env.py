"""The jinja2 environments over the shipped templates/ folder.

HTML (``autoescape=True``): jinja2 escapes every ``{{ ... }}`` for HTML. Markdown
(``autoescape=False``): every ``{{ ... }}`` passes through :func:`diagnose.escape.md_finalize`,
which escapes it for Markdown unless it is escaped already (``md``/``md_code`` results). So
neither kind of template can print a value raw by forgetting a filter.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2
from markupsafe import Markup, escape

from diagnose.escape import md_finalize
from diagnose.render.text import ended, native_only, plain, short_frame, tool_cost
from diagnose.resources import templates_dir
from diagnose.words import count


@lru_cache(maxsize=2)
def environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=autoescape,  # noqa: S701 - Markdown: md_finalize escapes every value
        finalize=None if autoescape else md_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
        keep_trailing_newline=True,
    )
    env.globals["ended"] = ended  # plain text: the templates escape it as they show it
    env.globals["tool_cost"] = tool_cost  # plain text too
    env.globals["native_only"] = native_only  # plain text too
    env.globals["count"] = count  # "1 worker", "3 workers"
    if autoescape:
        env.globals["frame_html"] = frame_html
    return env


def frame_html(frame: object, limit: int = 400, short: bool = False) -> Markup:
    """A frame label ``name (path:line)`` with its name kept on one line: browsers may break
    a name such as ``serve.<locals>.worker`` at its punctuation (the location still wraps)."""
    text = short_frame(frame, limit) if short else plain(frame, limit)
    name, sep, where = text.partition(" (")
    return Markup('<span class="fn">{}</span>{}').format(name, escape(sep + where))
