"""Durations on the command line: ``15`` (seconds), ``15s``, ``10m``, ``2h``, ``7d``."""

from __future__ import annotations

import math
import re

from diagnose.errors import UsageError

UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smhd]?)")


def parse_duration(text: str, option: str) -> float:
    """Seconds in ``text``; :class:`UsageError` (exit 2) naming ``option`` otherwise."""
    m = _DURATION.fullmatch(text.strip().lower())
    seconds = float(m.group(1)) * UNITS[m.group(2) or "s"] if m else math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(
            f"{option} takes a duration such as 15, 15s, 10m, 2h or 7d (more than 0), not {text!r}"
        )
    return seconds


def format_duration(seconds: float) -> str:
    """The largest unit that shows ``seconds`` whole: 600 -> 10m, 90 -> 90s."""
    for unit in ("d", "h", "m"):
        if seconds >= UNITS[unit] and seconds % UNITS[unit] == 0:
            return f"{seconds / UNITS[unit]:g}{unit}"
    return f"{seconds:g}s"
