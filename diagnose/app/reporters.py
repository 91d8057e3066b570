"""What each command writes, in one table: per format, the file's name and its renderer.

Every renderer reads one plain, JSON-ready model (the report dict, the comparison, the
sweep report, the fleet) and returns the file's text; the model is built before, and
nothing here changes it. A new format is one :class:`Reporter` under each command that
writes it. The renderers import their templates (jinja2, and pandas through the charts)
when called, so that the CLI starts a capture without them (tests/unit/test_cli_start.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from diagnose.app.output import OutputTarget
from diagnose.bundle.writer import dump_json
from diagnose.errors import UsageError


@dataclass(frozen=True)
class Reporter:
    """One format of one command: its file's default name and how the model becomes it."""

    file_name: str
    render: Callable[[Any], str | bytes]


def json_text(model: Any) -> str:
    """A model as its .json file holds it (compare, sweep, fleet)."""
    return json.dumps(model, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def report_file_json(report: Any) -> bytes:
    """report.json: as the bundle's other JSON files (values JSON lacks become text)."""
    return dump_json(report)


def report_markdown(report: Any) -> str:
    from diagnose.render.markdown import render_markdown

    return render_markdown(report)


def report_html(report: Any) -> str:
    from diagnose.render.charts import chart_data
    from diagnose.render.html import render_html

    return render_html(report, chart_data(report))


def compare_markdown(c: Any) -> str:
    from diagnose.render.compare import render_compare_markdown

    return render_compare_markdown(c)


def compare_html(c: Any) -> str:
    from diagnose.render.compare import render_compare_html

    return render_compare_html(c)


def sweep_markdown(m: Any) -> str:
    from diagnose.render.sweep import render_sweep_markdown

    return render_sweep_markdown(m)


def sweep_html(m: Any) -> str:
    from diagnose.render.sweep import render_sweep_html

    return render_sweep_html(m)


def fleet_markdown(f: Any) -> str:
    from diagnose.render.watch import render_fleet_markdown

    return render_fleet_markdown(f)


def fleet_html(f: Any) -> str:
    from diagnose.render.watch import render_fleet_html

    return render_fleet_html(f)


#: command -> format -> reporter; the formats in the order ``--format`` names them
REPORTERS: dict[str, dict[str, Reporter]] = {
    "report": {
        "html": Reporter("report.html", report_html),
        "md": Reporter("report.md", report_markdown),
        "json": Reporter("report.json", report_file_json),
    },
    "compare": {
        "html": Reporter("compare.html", compare_html),
        "md": Reporter("compare.md", compare_markdown),
        "json": Reporter("compare.json", json_text),
    },
    "sweep": {
        "html": Reporter("report.html", sweep_html),
        "md": Reporter("report.md", sweep_markdown),
        "json": Reporter("report.json", json_text),
    },
    "fleet": {
        "html": Reporter("fleet.html", fleet_html),
        "md": Reporter("fleet.md", fleet_markdown),
        "json": Reporter("fleet.json", json_text),
    },
}


def formats_of(command: str) -> tuple[str, ...]:
    """The formats ``command`` writes."""
    return tuple(REPORTERS[command])


def file_names(command: str) -> dict[str, str]:
    """Format -> the file ``command`` writes it to in a directory."""
    return {fmt: r.file_name for fmt, r in REPORTERS[command].items()}


def parse_formats(text: str | Sequence[str], command: str = "report") -> list[str]:
    """``--format html,md``: the formats asked for, each once, in the order given."""
    known = formats_of(command)
    items = text.split(",") if isinstance(text, str) else list(text)
    out = []
    for item in items:
        f = item.strip().lower()
        if f == "markdown":
            f = "md"
        if not f:
            continue
        if f not in known:
            raise UsageError(f"unknown report format {f!r}; choose from {', '.join(known)}")
        if f not in out:
            out.append(f)
    if not out:
        raise UsageError("no report format given")
    return out


def write_formats(command: str, model: Any, target: OutputTarget, fmts: Sequence[str]) -> None:
    """Render ``model`` in each of ``fmts`` and write it to ``target``."""
    # the small files first: on a disk that fills up, they are the ones that fit
    for fmt in sorted(fmts, key=lambda f: f == "html"):
        target.write(fmt, REPORTERS[command][fmt].render(model))
