"""The jinja2 environment over the shipped templates/ folder."""

from __future__ import annotations

from functools import lru_cache

import jinja2

from diagnose.render.text import ended
from diagnose.resources import templates_dir


@lru_cache(maxsize=2)
def environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=autoescape,  # noqa: S701 - Markdown escapes with its own filters (render/text.py)
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
        keep_trailing_newline=True,
    )
    env.globals["ended"] = ended  # plain text: the templates escape it as they show it
    return env
