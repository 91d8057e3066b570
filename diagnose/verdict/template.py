"""Message templates in rule files: ``"{lock_top_waiters} threads waited {lock_top_wait_s:.1f} s"``.

Only ``{metric}`` and ``{metric:SPEC}`` with SPEC one of ``.Nf``, ``.N%``, ``.Ng``, ``d``
(N a digit or two), or ``count NOUN`` after one of those or alone (a count and its noun
agreeing: ``{app_threads_busy:count application thread}`` -> "1 application thread", "4
application threads"; ``{x:.0f count thread}``) are allowed: no
attribute access, indexing, conversions or nested fields, so a template can never reach into
Python objects the way ``str.format`` can. A metric that was not measured renders as ``n/a``.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from diagnose.words import count

MAX_TEMPLATE = 2000
_SPEC = re.compile(r"^(?:\.\d{1,2}[f%g]|d|)$")
_COUNT = re.compile(r"^(?:(\.\d{1,2}[fg]|d) )?count ([a-z][a-z -]{0,39}[a-z])$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class Template:
    source: str
    parts: tuple[tuple[str, str | None, str], ...]  # (literal, name or None, spec)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for _, n, _ in self.parts if n)

    def render(self, metrics: Mapping[str, Any]) -> str:
        out = []
        for literal, name, spec in self.parts:
            out.append(literal)
            if name is not None:
                out.append(format_value(metrics.get(name), spec))
        return "".join(out)


def format_value(v: Any, spec: str = "") -> str:
    m = _COUNT.match(spec)
    if m:  # the noun agrees with the number as shown
        return count(format_value(v, m.group(1) or ""), m.group(2))
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return "n/a"
        if isinstance(v, int) and abs(v) > 10**300:  # beyond float(), and str() may refuse it
            return "out of range"
        if spec == "d":
            return str(round(v))
        if spec:
            return format(float(v), spec)
        if isinstance(v, float):
            if v.is_integer() or abs(v) >= 100:  # 2910 rather than 2.91e+03
                return str(round(v))
            return f"{v:.3g}"
        return str(v)
    return str(v)


def compile_template(source: str, known: Mapping[str, Any] | None = None) -> Template:
    if not isinstance(source, str):
        raise TemplateError("a message must be a string")
    if len(source) > MAX_TEMPLATE:
        raise TemplateError(f"message is longer than {MAX_TEMPLATE} characters")
    try:
        parsed = list(string.Formatter().parse(source))
    except ValueError as exc:
        raise TemplateError(f"bad braces in message: {exc}") from None
    parts: list[tuple[str, str | None, str]] = []
    for literal, field, spec, conversion in parsed:
        if field is None:
            parts.append((literal, None, ""))
            continue
        if conversion:
            raise TemplateError(f"conversion !{conversion} is not allowed in {{{field}}}")
        if not _NAME.match(field):
            raise TemplateError(
                f"{{{field}}} is not a plain metric name (no attributes, indexes or expressions)"
            )
        spec = spec or ""
        if "{" in spec or not (_SPEC.match(spec) or _COUNT.match(spec)):
            raise TemplateError(
                f"format {spec!r} in {{{field}}} is not allowed (use .1f, .0%, d, count NOUN)"
            )
        if known is not None and field not in known:
            raise TemplateError(f"unknown metric {field!r} in message")
        parts.append((literal, field, spec))
    return Template(source, tuple(parts))
