"""Text helpers for the renderers: short frame labels, percentages, and (re-exported from
:mod:`diagnose.escape`) the escaping of text a target or a bundle controls."""

from __future__ import annotations

import re

# the escaping functions live in diagnose/escape.py (one per output kind); these names are
# kept for the templates and renderers that import them from here
from collections.abc import Mapping
from typing import Any

from diagnose.escape import md, md_code, plotly_text
from diagnose.escape import term as plain

__all__ = ["md", "md_code", "native_only", "pct", "plain", "plotly_text", "short_frame"]


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
    if not isinstance(x, (int, float)) or isinstance(x, bool) or x != x:
        return "n/a"
    v = float(x) * 100
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


#: the costliest parts of diagnose's own CPU named in the one-line summary
TOOL_PARTS_SHOWN = 3


def tool_cost(capture: dict[str, object]) -> str:
    """What measuring cost the host, in words, from the report's ``capture``: the CPU that
    diagnose and every helper it ran (py-spy, perf) used while capturing. Plain text."""
    cores, share = capture.get("tool_cpu_cores"), capture.get("tool_cpu_share")
    if not isinstance(cores, (int, float)) or isinstance(cores, bool):
        return "diagnose's own CPU: not measured (it needs the proc collector)"
    text = f"diagnose and its helpers used {cores:.2f} cores while capturing"
    if isinstance(share, (int, float)) and not isinstance(share, bool):
        text += f" ({share:.0%} of the cores available)"
    parts = capture.get("tool_cpu_parts")
    if isinstance(parts, list):
        measured = [
            (str(p.get("part")), float(p["cores"]))
            for p in parts
            if isinstance(p, dict)
            and isinstance(p.get("cores"), (int, float))
            and not isinstance(p.get("cores"), bool)
        ]
        if measured:
            most = ", ".join(f"{name} {c:.2f}" for name, c in measured[:TOOL_PARTS_SHOWN])
            window = sum(c for _, c in measured)
            text += f"; {window:.2f} while the window was open ({most})"
    return text + _budget(capture.get("cpu_budget"))


def _budget(plan: object) -> str:
    """``; budget 0.05 cores (py-spy 100 -> 45 Hz)``: the budget and what it lowered."""
    if not isinstance(plan, dict):
        return ""
    budget = plan.get("budget_cores")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or budget <= 0:
        return ""
    thinned = [str(x) for x in plan.get("thinned") or [] if isinstance(x, str)]
    lowered = f", lowered {', '.join(thinned)}" if thinned else ", no rate lowered"
    return f"; budget {budget:g} cores{lowered}"


def native_only(report: Mapping[str, Any]) -> str:
    """What a verdict on a process that is not Python rests on, said first by every
    summary ('' for a Python target, or a report from before ``target.is_python``).
    Plain text: escape it for the output format."""
    t = report.get("target") or {}
    if t.get("is_python") is not False:
        return ""
    perf = (report.get("collectors") or {}).get("perf") or {}
    if perf.get("status") == "ok":
        source = "native stacks (perf) and thread states (/proc) alone"
    else:
        source = "thread states (/proc) alone: perf's native stacks were not recorded either"
    return (
        f"PID {t.get('pid')} ({t.get('comm')}) is not a Python process: no Python stacks or "
        f"GIL samples were taken, and this verdict rests on {source}"
    )
