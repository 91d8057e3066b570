"""The summary printed after a capture: verdict, top findings, what was not measured.

Every string the target or the bundle controls goes through :func:`~diagnose.escape.term`
(no control characters, so no escape sequence reaches the terminal, one bounded line)
before it is wrapped, and every finished line goes through it again (:func:`finish`), so a
field added later cannot reach the terminal raw; colour is added after that, only around
our own text, and only on a terminal.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

import click

from diagnose.escape import term
from diagnose.render.schema import Report, VerdictSection
from diagnose.render.text import ended, native_only, plain, tool_cost
from diagnose.words import count

_COLORS = {
    "preprocess": "magenta",
    "lock": "red",
    "scheduling": "yellow",
    "compute": "blue",
    "memory_bandwidth": "cyan",
    "io": "green",
    "idle": "white",
    "unknown": "white",
}


#: the most of one field shown: far beyond any finding's text, it only keeps a hostile
#: bundle from flooding the terminal; the text is wrapped, never cut to the width
TEXT_LIMIT = 4000


def _width() -> int:
    # the terminal's width, capped at 120 for reading; a narrow one still gets 40 columns
    return max(40, min(120, shutil.get_terminal_size((100, 24)).columns - 1))


def _wrap(text: str, first: str, rest: str, width: int) -> list[str]:
    """``text`` over as many lines as it takes, within ``width``: no word is dropped, and
    only one longer than a whole line (a long path) is split across lines."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def render_summary(
    report: Report,
    report_path: str | None = None,
    color: bool = False,
    width: int | None = None,
) -> str:
    width = width or _width()
    v = report["verdict"]
    cap = report.get("capture") or {}
    lines: list[str] = []
    head = f"{plain(v['title'])}{' (' + plain(v['kind']) + ')' if v.get('kind') else ''}"
    lines.append(f"Verdict: {head}, confidence {_percent(v.get('confidence'))}")
    service = _service_lines(report, width)
    if service:
        lines[0] = service[0]  # the service's verdict first; the busiest worker's below
        lines += service[1:] + _wrap(f"the busiest worker's: {head}", "  ", "  ", width)
    native = native_only(report)
    if native:  # right under the verdict: without Python stacks it sees much less
        lines[1:1] = _wrap(plain(native, TEXT_LIMIT), "  ", "  ", width)
    t = report["target"]
    lines += _wrap(
        plain(
            f"target PID {t.get('pid')} ({t.get('comm')}), {cap.get('duration_actual') or 0:.1f} s, "
            f"{ended(cap.get('ended_by'))}",
            TEXT_LIMIT,
        ),
        "  ",
        "  ",
        width,
    )
    lines += _wrap(plain(tool_cost(cap), TEXT_LIMIT), "  ", "  ", width)
    if not (report.get("bundle") or {}).get("complete", True):
        lines += _wrap(
            "the capture did not finish: the report uses what was recorded until then",
            "  ",
            "  ",
            width,
        )
    if t.get("note"):
        lines += _wrap(plain(t["note"], TEXT_LIMIT), "  ", "  ", width)
    lines += _wrap(_unexplained(v), "  ", "  ", width)
    u = v.get("uncertain")
    if u:
        lines += _wrap(
            f"uncertain between {plain(v['primary'], 40)} and {plain(u.get('category'), 40)}: "
            f"{plain(u.get('separate_by'), TEXT_LIMIT)}",
            "  ",
            "  ",
            width,
        )
    lines += _finding_lines(report, width)
    lines += _not_measured_lines(report, width)
    if report.get("broken_rules"):
        lines.append(f"Broken rules skipped: {len(report['broken_rules'])} (see the report)")
    if report_path:
        lines.append(f"Report: {plain(report_path, 1000)}")
    out = finish(lines)
    if color:
        out[0] = click.style(out[0], fg=_COLORS.get(str(v.get("primary")), "white"), bold=True)
    return "\n".join(out)


def _service_lines(report: Report, width: int) -> list[str]:
    """A service of several workers: its verdict, then one line per worker ([] for one
    process)."""
    s = report.get("service") or {}
    workers = s.get("workers") or []
    if not workers:
        return []
    sv = s.get("verdict")
    if sv:
        kind = f" ({plain(sv['kind'])})" if sv.get("kind") else ""
        head = (
            f"Verdict: {plain(sv.get('title'))}{kind}, confidence {_percent(sv.get('confidence'))}"
        )
        head += f", for the service's {count(len(workers), 'worker')}"
    else:
        head = f"Verdict: none of the service's {count(len(workers), 'worker')} could be judged"
    lines = [head]
    if sv:
        lines += _wrap(plain(sv.get("summary"), TEXT_LIMIT), "  ", "    ", width)
        if sv.get("uneven_text"):
            lines += _wrap(plain(sv["uneven_text"], TEXT_LIMIT), "  ", "    ", width)
    if isinstance(s.get("tool_cpu_cores"), (int, float)):
        text = f"diagnose used {s['tool_cpu_cores']:.2f} cores for the {count(len(workers), 'capture')}"
        if isinstance(s.get("tool_cpu_window_cores"), (int, float)):
            text += f", {s['tool_cpu_window_cores']:.2f} while their windows were open"
        lines += _wrap(text, "  ", "    ", width)
    for w in workers:
        if w.get("primary"):
            kind = f"/{plain(w['kind'])}" if w.get("kind") else ""
            cores = w.get("cpu_cores")
            text = f"PID {w.get('pid')}: {plain(w.get('primary'))}{kind} {_percent(w.get('confidence'))}"
            text += f", {cores:.2f} cores" if isinstance(cores, (int, float)) else ""
            text += " (below)" if w.get("this") else f" (workers/{w.get('pid')}/)"
        else:
            text = (
                f"PID {w.get('pid')}: not judged: "
                f"{plain(w.get('reason') or w.get('status'), TEXT_LIMIT)}"
            )
        lines += _wrap(text, "  ", "    ", width)
    return lines + _service_finding_lines(s.get("findings") or [], width)


def _service_finding_lines(findings: list[dict[str, Any]], width: int) -> list[str]:
    """What every worker found (its lead and those close to it), one line per rule and site."""
    if not findings:
        return []
    lines = ["Found in the workers:"]
    for f in findings:
        kind = "/" + plain(f["kind"]) if f.get("kind") else ""
        pids = ", ".join(str(w.get("pid")) for w in f.get("workers") or [])
        site = f" at {plain(f['site'], 200)}" if f.get("site") else ""
        head = f"{plain(f.get('title'))} [{plain(f.get('category'))}{kind}, score {_number(f.get('score'))}]"
        lines += _wrap(f"{head}{site}, in PID {pids}", "  - ", "    ", width)
        if f.get("fix"):
            lines += _wrap(f"fix: {plain(f['fix'], TEXT_LIMIT)}", "    ", "      ", width)
    return lines


#: how many findings a report's first screen lists
FIRST_SCREEN_FINDINGS = 3


def _finding_lines(report: Report, width: int) -> list[str]:
    """The top findings (evidence, first fix) and two advisories."""
    v = report["verdict"]
    lines: list[str] = []
    main = [f for f in report["findings"] if not f.get("advisory")][:FIRST_SCREEN_FINDINGS]
    if not main:
        lines += _wrap(plain(v["headline"], TEXT_LIMIT), "  ", "  ", width)
    for i, f in enumerate(main, 1):
        kind = "/" + plain(f["kind"]) if f.get("kind") else ""
        lines += _wrap(
            f"{plain(f['title'])} [{plain(f['category'])}{kind}, score {_number(f.get('score'))}]",
            f"{i}. ",
            "   ",
            width,
        )
        lines += _wrap(plain(f["summary"], TEXT_LIMIT), "   evidence: ", "      ", width)
        if f.get("fixes"):
            lines += _wrap(plain(f["fixes"][0], TEXT_LIMIT), "   first fix: ", "      ", width)
    for f in [f for f in report["findings"] if f.get("advisory")][:2]:
        lines += _wrap(
            f"{plain(f['title'])}: {plain(f['summary'], TEXT_LIMIT)}", "   also: ", "      ", width
        )
    return lines


def _not_measured_lines(report: Report, width: int) -> list[str]:
    """What could not be measured, and the rules that could not be evaluated."""
    lines: list[str] = []
    missing = [n for n in report.get("not_measured", []) if n["status"] != "ok"]
    not_evaluated = report.get("not_evaluated") or []
    if missing or not_evaluated:
        lines.append("Not measured:")
        for n in missing:
            lines += _wrap(
                f"{plain(n['collector'], 100)} ({plain(n['status'], 40)}): "
                f"{plain(n['reason'], TEXT_LIMIT)}",
                "  - ",
                "    ",
                width,
            )
        if not_evaluated:
            ids = ", ".join(plain(n["id"], 100) for n in not_evaluated[:6])
            more = f" and {len(not_evaluated) - 6} more" if len(not_evaluated) > 6 else ""
            lines += _wrap(
                f"{count(len(not_evaluated), 'rule')} could not be evaluated: {ids}{more}",
                "  - ",
                "    ",
                width,
            )
    return lines


def _unexplained(v: VerdictSection) -> str:
    """The share of on-CPU time no stage explains, as every summary shows it."""
    share = v.get("unexplained_share")
    if not isinstance(share, (int, float)):
        return "unexplained on-CPU time: not measured (no on-CPU stacks)"
    placed = v.get("placed_share")
    by = (
        f"; {_percent(placed)} placed by call structure" if isinstance(placed, (int, float)) else ""
    )
    large = ": large, so a verdict about what the CPU ran is less sure" if share > 0.3 else ""
    return f"unexplained on-CPU time: {_percent(share)} (in no stage{by}){large}"


def finish(lines: list[str]) -> list[str]:
    """Every line as the terminal will get it: no control character, whatever built it."""
    return [term(line, 10_000) for line in lines]


def fit(lines: list[str], width: int | None = None) -> list[str]:
    """:func:`finish`, each line wrapped to the terminal's width (continued two columns in
    from where it starts), no word dropped."""
    width = width or _width()
    out: list[str] = []
    for line in finish(lines):
        lead = line[: len(line) - len(line.lstrip())]
        out += _wrap(line.strip(), lead, lead + "  ", width) if line.strip() else [""]
    return out


def _percent(x: object) -> str:
    return f"{x * 100:.0f}%" if isinstance(x, (int, float)) else "n/a"


def _number(x: object) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else plain(x, 20)
