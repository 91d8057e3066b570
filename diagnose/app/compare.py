"""Two bundles side by side, for the one-variable-at-a-time loop: what changed and which way.

:func:`compare` diagnoses both bundles (from the bundles alone, like ``diagnose report``) and
builds one plain, JSON-ready dict, the contract the renderers display:

- ``service``: the service's own figures (throughput, latency percentiles, errors) when
  known, each judged, and the outcome (improved, regressed, mixed, same): what the change
  was made for, shown first (:mod:`diagnose.verdict.outcome`);
- ``verdict``: both verdicts, whether the primary category changed, and the change in
  words (``words``: "the lock contention is gone; now compute-bound");
- ``metrics``: every metric measured in either capture with its delta and, where the metric
  has a better direction (:data:`DIRECTIONS`), ``better`` or ``worse``; a change within the
  run-to-run noise (:data:`SHARE_NOISE`, :data:`RELATIVE_NOISE`) is ``same``; a metric
  that moved the wrong way because the bottleneck is gone or the service does more work is
  ``moved``, with ``why`` (:func:`diagnose.verdict.outcome.judge_in_context`);
- ``findings``: rules that fired only after (appeared), only before (disappeared), or in both;
- ``caveats``: what differs besides the change under test (the host's other load, cores,
  capture length, a partial capture, a collector missing on one side);
- ``flames``: differential flame graphs (on-CPU, wall clock, waits): both captures' stacks on
  one tree, each node with its value before and after, plus the stacks that got hotter and
  colder. Values are per second of capture, so captures of different lengths compare.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeGuard

from diagnose import __version__
from diagnose.analyse.registry import known_metrics
from diagnose.app.output import OutputTarget, open_directory, open_output
from diagnose.app.report import diagnose
from diagnose.app.reporters import file_names, write_formats
from diagnose.bundle.reader import Bundle
from diagnose.errors import UsageError
from diagnose.formats.stacks import Stack, ThreadFrame
from diagnose.render.model import report_flames
from diagnose.render.schema import Report, is_report_file, load_report
from diagnose.verdict.outcome import judge_in_context, service_change, verdict_words
from diagnose.verdict.service import finding_site, lead_verdict
from diagnose.verdict.template import format_value

COMPARE_SCHEMA = "diagnose.compare/1"

#: The metrics that have a better direction (the catalogue's ``better``). The rest (CPU
#: used, thread counts, memory footprints of a deliberate change) are shown with their delta
#: but not judged.
DIRECTIONS: dict[str, str] = {n: d.better for n, d in known_metrics().items() if d.better}

#: Changes smaller than these are ``same``: repeated captures of one unchanged service vary
#: about +-15% here (docs/playbook.md); shares by about 5 points.
SHARE_NOISE = 0.05
RELATIVE_NOISE = 0.15

FLAME_VIEWS = {
    "cpu": ("On-CPU", "cores"),
    "wall": ("Wall clock, all Python threads", "threads"),
    "waits": ("Waits: lock, GIL, I/O", "threads"),
}
MAX_NODES = 400  # per differential flame graph: enough to read, quick to draw
MIN_NODE_SHARE = 0.002  # nodes smaller than this share of the larger capture are dropped
TOP_STACKS = 8  # hotter / colder stacks listed


#: Changes smaller than these (absolute, by unit) are ``same`` whatever their relative size:
#: 0.03 -> 0 threads waiting is no news.
ABSOLUTE_NOISE = {
    "threads": 0.25,
    "processes": 0.25,
    "thread-s": 0.25,
    "s": 0.1,
    "cores": 0.1,
    "1/s": 5.0,
    "ms": 0.1,
    "MiB": 5.0,
    "MiB/min": 1.0,
    "samples": 10.0,
    "ratio": 0.05,
}
_IDS = re.compile(r"0x[0-9a-fA-F]+|\d+")


def _number(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return format_value(round(v, 3 if abs(v) < 1 else 2))


def _display(v: Any, unit: str) -> str:
    if v is None:
        return "not measured"
    if not _is_number(v):
        return format_value(v)
    if unit == "share":
        return f"{v:.0%}"
    text = _number(float(v))
    return f"{text} {unit}" if unit and unit not in ("text", "bool", "ratio") else text


def _display_delta(delta: float, relative: float | None, unit: str) -> str:
    if unit == "share":
        return f"{delta * 100:+.0f} pts"
    sign = "+" if delta > 0 else ""
    text = sign + _number(delta) + (f" {unit}" if unit not in ("ratio", "bool", "") else "")
    return text + (f" ({relative:+.0%})" if relative is not None else "")


def _is_number(v: object) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def metric_delta(name: str, unit: str, before: Any, after: Any) -> dict[str, Any]:
    """One metric's change: ``change`` is better, worse, changed, same, new or gone;
    ``significance`` is the change in multiples of the noise band (0 for text)."""
    direction = DIRECTIONS.get(name)
    row: dict[str, Any] = {
        "name": name,
        "unit": unit,
        "before": before,
        "after": after,
        "display_before": _display(before, unit),
        "display_after": _display(after, unit),
        "delta": None,
        "relative": None,
        "display_delta": "",
        "direction": direction,
        "change": "same",
        "significance": 0.0,
        "why": None,  # why a change is judged as it is, where context decided it
        "per_request": None,  # a rate per second, divided by each side's throughput
        "display_per_request": None,
    }
    if before is None or after is None:
        row["change"] = "new" if before is None else "gone"
        return row
    if not (_is_number(before) and _is_number(after)):
        # addresses, TIDs and line numbers differ between any two runs: not a change
        same = _IDS.sub("N", str(before)) == _IDS.sub("N", str(after))
        row["change"] = "same" if same else "changed"
        return row
    delta = float(after) - float(before)
    relative = delta / abs(float(before)) if before else None
    if unit == "share":
        band = SHARE_NOISE
    else:
        band = max(
            ABSOLUTE_NOISE.get(unit, 0.0),
            RELATIVE_NOISE * max(abs(float(before)), abs(float(after))),
            1e-12,
        )
    significance = abs(delta) / band
    row.update(
        delta=round(delta, 6),
        relative=None if relative is None else round(relative, 4),
        display_delta=_display_delta(delta, relative, unit),
        significance=round(significance, 3),
    )
    if significance < 1:
        row["change"] = "same"
    elif direction is None:
        row["change"] = "changed"
    else:
        row["change"] = "better" if (delta < 0) == (direction == "lower") else "worse"
    return row


def metric_deltas(
    before: Mapping[str, Any], after: Mapping[str, Any], focus: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """Every metric measured in either capture: judged ones first, those in ``focus`` (the
    verdicts' evidence) first among them, then by how far beyond the noise they moved."""
    known = known_metrics()
    focus = set(focus)
    rows = []
    for name in dict.fromkeys([*before, *after]):
        b, a = before.get(name), after.get(name)
        if b is None and a is None:
            continue
        d = known.get(name)
        row = metric_delta(name, d.unit if d else "", b, a)
        row["description"] = d.description if d else ""
        row["focus"] = name in focus
        rows.append(row)
    rows.sort(key=_rank)
    return rows


_RANKS = {"better": 0, "worse": 0, "moved": 1, "changed": 2, "new": 3, "gone": 3, "same": 4}


def _rank(r: Mapping[str, Any]) -> tuple[int, bool, float]:
    return _RANKS[r["change"]], not r["focus"], -r["significance"]


def _finding_brief(f: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": f["id"],
        "category": f["category"],
        "kind": f.get("kind"),
        "title": f["title"],
        "advisory": bool(f.get("advisory")),
        "score": f["score"],
        "summary": f["summary"],
        "site": f.get("site", finding_site(f)),
    }


def service_findings(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """What a report's whole service found: its own findings (the busiest worker's, or the
    one process's) and what its other workers found (the service section's, merged by rule
    and site); a rule and site found in several keeps its highest score."""
    best: dict[tuple[str, str], Mapping[str, Any]] = {}
    others = (report.get("service") or {}).get("findings") or []
    for f in [*(report.get("findings") or []), *others]:
        key = (str(f["id"]), str(f.get("site", finding_site(f))))
        if key not in best or f["score"] > best[key]["score"]:
            best[key] = f
    return list(best.values())


def finding_changes(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Findings (rules that fired) that appeared, disappeared, or stayed, by rule and site
    (the code the finding names: a lock that moved to another line is another lock)."""

    def key(f: Mapping[str, Any]) -> tuple[str, str]:
        return str(f["id"]), str(f.get("site", finding_site(f)))

    b = {key(f): f for f in before}
    a = {key(f): f for f in after}
    stayed = []
    for k in b.keys() & a.keys():
        row = _finding_brief(a[k])
        row.update(score_before=b[k]["score"], score_after=a[k]["score"])
        row["score_delta"] = round(a[k]["score"] - b[k]["score"], 3)
        stayed.append(row)
    stayed.sort(key=lambda r: -r["score_after"])
    return {
        "appeared": [_finding_brief(a[k]) for k in a if k not in b],
        "disappeared": [_finding_brief(b[k]) for k in b if k not in a],
        "stayed": stayed,
    }


def _verdict_brief(report: Mapping[str, Any]) -> dict[str, Any]:
    v = lead_verdict(report)
    return {k: v.get(k) for k in ("primary", "kind", "title", "confidence", "headline")}


def verdict_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Both verdicts; ``words`` says the change as a person would."""
    vb, va = _verdict_brief(before), _verdict_brief(after)
    changed = (vb["primary"], vb["kind"]) != (va["primary"], va["kind"])

    def label(v: Mapping[str, Any]) -> str:
        kind = f" ({v['kind']})" if v.get("kind") else ""
        return f"{v['title']}{kind}, confidence {v['confidence'] * 100:.0f}%"

    return {
        "before": vb,
        "after": va,
        "changed": changed,
        "text": f"{label(vb)} → {label(va)}",
        "words": verdict_words(before, after),
    }


# --- differential flame graphs -------------------------------------------------------------

_LINE = re.compile(r":\d+\)$")


def normalise_frame(frame: str) -> str:
    """Make frames of two captures meet: thread IDs and numbers in thread names go (the
    runs have other TIDs and may have more threads), and so do line numbers (the change
    under test may have moved the code)."""
    thread = ThreadFrame.parse(frame)
    if thread is not None:
        name = re.sub(r"\d+", "N", thread.name) or "(unnamed)"
        return f"thread: {name}"
    return _LINE.sub(")", frame)


def scaled_stacks(flame: Iterable[tuple[Sequence[str], float]], scale: float) -> dict[Stack, float]:
    out: dict[Stack, float] = defaultdict(float)
    for stack, weight in flame:
        out[tuple(normalise_frame(f) for f in stack)] += float(weight) * scale
    return out


def _flame_scale(view: str, flame: list[tuple[Any, float]], metrics: Mapping[str, Any]) -> float:
    """Weights -> per-second values: threads (wall, waits) or cores (on-CPU)."""
    if view == "cpu":
        total = sum(w for _, w in flame)
        cores = metrics.get("process_cpu_cores")
        return (float(cores) if _is_number(cores) else 1.0) / total if total > 0 else 0.0
    window = metrics.get("window_s")
    return 1.0 / float(window) if _is_number(window) and window > 0 else 1.0


def diff_tree(
    before: Mapping[Stack, float],
    after: Mapping[Stack, float],
    max_nodes: int = MAX_NODES,
    min_share: float = MIN_NODE_SHARE,
) -> dict[str, list[Any]]:
    """One tree over both captures' stacks, as plotly icicle columns.

    A node's ``size`` is the sum, over the stacks through it, of the larger of the stack's
    before and after values, so what vanished stays visible and a parent is never smaller
    than its children; ``before``/``after`` are the node's inclusive values. The biggest
    ``max_nodes`` nodes are kept (a parent is never smaller, so the tree stays whole).
    """
    nodes: dict[Stack, list[float]] = {}
    for stack in before.keys() | after.keys():
        b, a = before.get(stack, 0.0), after.get(stack, 0.0)
        size = max(a, b)
        for depth in range(1, len(stack) + 1):
            n = nodes.setdefault(stack[:depth], [0.0, 0.0, 0.0])
            n[0] += b
            n[1] += a
            n[2] += size
    total = [sum(before.values()), sum(after.values())]
    root_size = sum(v[2] for k, v in nodes.items() if len(k) == 1)
    floor = min_share * max(root_size, 1e-12)
    kept = sorted(
        (p for p, v in nodes.items() if v[2] >= floor), key=lambda p: (-nodes[p][2], len(p))
    )
    kept = sorted(kept[:max_nodes], key=lambda p: p)
    ids = {p: f"n{i + 1}" for i, p in enumerate(kept)}
    cols: dict[str, list[Any]] = {
        "ids": ["n0"],
        "labels": ["all"],
        "parents": [""],
        "before": [round(total[0], 4)],
        "after": [round(total[1], 4)],
        "size": [round(root_size, 4)],
    }
    for p in kept:
        b, a, size = nodes[p]
        cols["ids"].append(ids[p])
        cols["labels"].append(p[-1])
        cols["parents"].append(ids.get(p[:-1], "n0"))
        cols["before"].append(round(b, 4))
        cols["after"].append(round(a, 4))
        cols["size"].append(round(size, 4))
    cols["delta"] = [round(a - b, 4) for b, a in zip(cols["before"], cols["after"], strict=True)]
    _parents_cover_children(cols)
    return cols


def _parents_cover_children(cols: dict[str, list[Any]]) -> None:
    """plotly's icicle (branchvalues 'total') draws nothing at all if a node's children sum
    to more than the node, which rounding can cause by 0.0001: raise such parents."""
    index = {node: i for i, node in enumerate(cols["ids"])}
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(cols["parents"]):
        if parent in index:
            children.setdefault(index[parent], []).append(i)
    sizes = cols["size"]
    order: list[int] = []  # parents before children; walked backwards = children first
    stack = [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(children.get(i, []))
    for i in reversed(order):
        total = sum(sizes[k] for k in children.get(i, []))
        if total > sizes[i]:
            sizes[i] = round(total + 0.0001, 4)


def hot_and_cold(
    before: Mapping[Stack, float],
    after: Mapping[Stack, float],
    top: int = TOP_STACKS,
) -> dict[str, list[dict[str, Any]]]:
    """The stacks whose value rose most (hotter) and fell most (colder)."""
    scale = max(sum(before.values()), sum(after.values()), 1e-12)
    rows: list[dict[str, Any]] = []
    for stack in before.keys() | after.keys():
        b, a = before.get(stack, 0.0), after.get(stack, 0.0)
        if abs(a - b) >= 0.01 * scale:
            rows.append({"stack": list(stack), "before": round(b, 4), "after": round(a, 4),
                         "delta": round(a - b, 4)})  # fmt: skip
    rows.sort(key=lambda r: (r["delta"], r["stack"]))
    return {
        "hotter": [r for r in reversed(rows) if r["delta"] > 0][:top],
        "colder": [r for r in rows if r["delta"] < 0][:top],
    }


def diff_flames(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The flame views of two reports, diffed."""
    flames_b, flames_a = report_flames(before), report_flames(after)
    out: dict[str, Any] = {}
    for view, (title, unit) in FLAME_VIEWS.items():
        # absent: not recorded; empty: recorded, and nothing in it (no thread waited)
        fb, fa = flames_b.get(view), flames_a.get(view)
        if not fb and not fa:
            continue
        fb, fa = fb or [], fa or []
        sb = scaled_stacks(fb, _flame_scale(view, fb, before["metrics"]))
        sa = scaled_stacks(fa, _flame_scale(view, fa, after["metrics"]))
        out[view] = {
            "title": title,
            "unit": unit,
            "missing": (
                "before" if view not in flames_b else ("after" if view not in flames_a else None)
            ),
            "tree": diff_tree(sb, sa),
            **hot_and_cold(sb, sa),
        }
    return out


# --- can the two captures be compared? ---------------------------------------------------

#: Other work on the host moving by more than this (share of the usable CPUs) makes the
#: captures' scheduling metrics incomparable.
OTHER_LOAD_LIMIT = 0.15


def caveats(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What differs between the captures (two reports) besides the change under test, each
    a reason to distrust part of the comparison."""
    mb, ma = before["metrics"], after["metrics"]
    out = []
    ob, oa = mb.get("host_other_cpu_share"), ma.get("host_other_cpu_share")
    if _is_number(ob) and _is_number(oa) and abs(oa - ob) > OTHER_LOAD_LIMIT:
        out.append(
            f"other processes kept {ob:.0%} of the usable CPUs busy before and {oa:.0%} after: "
            "the host's load changed, so run-queue, switch and lock-wait figures move for that "
            "reason too; compare again on a quiet host, or capture the baseline twice to see "
            "the noise"
        )
    for name, what in (
        ("cores_available", "cores available"),
        ("python_version", "Python versions"),
    ):
        b, a = (None if v == "" else v for v in (mb.get(name), ma.get(name)))
        if (b is not None or a is not None) and b != a:
            known = {"before": b, "after": a}
            text = ", ".join(f"{'unknown' if v is None else v} {k}" for k, v in known.items())
            out.append(f"{what} differ: {text}")
    wb, wa = mb.get("window_s"), ma.get("window_s")
    if _is_number(wb) and _is_number(wa) and min(wb, wa) < 0.5 * max(wb, wa):
        out.append(
            f"the captures differ in length ({wb:.1f} s and {wa:.1f} s): counts and totals "
            "are not comparable, rates and shares are"
        )
    for name, r in (("before", before), ("after", after)):
        if not r["bundle"]["complete"] or r["capture"].get("ended_by") == "target_exited":
            out.append(f"the {name} capture is partial ({r['capture'].get('ended_by')})")
    sources = {
        n["collector"]: (name, n["status"])
        for name, r in (("before", before), ("after", after))
        for n in r.get("not_measured", [])
        if n["status"] in ("unavailable", "failed")
    }
    ok_b = {n["collector"] for n in before.get("not_measured", [])}
    ok_a = {n["collector"] for n in after.get("not_measured", [])}
    for collector in sorted(ok_b ^ ok_a):
        if collector in sources:
            name, status = sources[collector]
            what = "failed" if status == "failed" else f"was {status}"
            out.append(f"collector {collector} {what} only {name}: its metrics do not compare")
    return out


# --- the whole comparison ------------------------------------------------------------------


def _side(r: Mapping[str, Any]) -> dict[str, Any]:
    cap = r["capture"]
    return {
        "bundle": r["bundle"]["path"],
        "complete": r["bundle"]["complete"],
        "target": {k: r["target"].get(k) for k in ("pid", "comm", "cmdline", "python_version")},
        "started": cap.get("started"),
        "duration_s": cap.get("duration_actual"),
        "ended_by": cap.get("ended_by"),
        "run": cap.get("run"),
        "not_measured": [n for n in r.get("not_measured", []) if n["status"] != "ok"],
    }


def build_comparison(
    rb: Mapping[str, Any],
    ra: Mapping[str, Any],
    service: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None] = (None, None),
) -> dict[str, Any]:
    """Compare two reports (report dicts, as report.json holds them); ``service``: each
    side's own figures (:func:`diagnose.verdict.outcome.figures`), or None."""
    focus = [
        e["metric"]
        for r in (rb, ra)
        for f in [x for x in r["findings"] if not x.get("advisory")][:1]
        for e in f.get("evidence", [])
    ]
    metrics = metric_deltas(rb["metrics"], ra["metrics"], focus)
    figures = service_change(*service)
    judge_in_context(metrics, figures, RELATIVE_NOISE)
    metrics.sort(key=_rank)
    return {
        "schema": COMPARE_SCHEMA,
        "tool_version": __version__,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "before": _side(rb),
        "after": _side(ra),
        "service": figures,
        "verdict": verdict_change(rb, ra),
        "caveats": caveats(rb, ra),
        "metrics": metrics,
        "counts": dict(Counter(m["change"] for m in metrics)),
        "findings": finding_changes(service_findings(rb), service_findings(ra)),
        "flames": diff_flames(rb, ra),
        "noise": {"share_points": SHARE_NOISE, "relative": RELATIVE_NOISE},
    }


def compare(
    before: Path | Bundle | Report,
    after: Path | Bundle | Report,
    rules_dirs: Iterable[Path] = (),
    service: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None] = (None, None),
) -> dict[str, Any]:
    """Diagnose both bundles (same rules) and compare them, or read both reports where a
    side is a report.json; ``service``: each side's own figures where known
    (:func:`diagnose.verdict.outcome.figures`)."""
    rules = list(rules_dirs)
    return build_comparison(side_report(before, rules), side_report(after, rules), service)


def open_side(side: Path, rules_dirs: Iterable[Path] = ()) -> Bundle | Report:
    """One side, opened (a bundle) or read and checked (a report.json): what is wrong with
    either is said before anything is analysed or written."""
    if is_report_file(side):
        if list(rules_dirs):
            raise UsageError("--rules judges bundles again: compare the bundles, not reports")
        return load_report(side)
    return Bundle.open(side)


def side_report(side: Path | Bundle | Report, rules_dirs: list[Path]) -> Report:
    """One side of a comparison: a bundle diagnosed, or a report.json read back."""
    if isinstance(side, dict):
        return side  # read back already (open_side)
    opened = open_side(side, rules_dirs) if isinstance(side, Path) else side
    return opened if isinstance(opened, dict) else diagnose(opened, rules_dirs).report


def write_comparison(
    c: dict[str, Any],
    after: Path | Bundle | OutputTarget,
    formats: list[str],
    out: Path | None = None,
) -> dict[str, Path]:
    """Write the comparison in ``formats``: into the AFTER bundle unless ``out`` is given
    (a file for one format, else a directory). Each file is complete or absent. Give the
    AFTER bundle as the :class:`Bundle` that was compared (its directory is written through
    the descriptor held since it was opened), or where to write, opened already with
    :func:`open_comparison` (so that a bad ``-o`` is refused before the analyses)."""
    target = after if isinstance(after, OutputTarget) else open_comparison(after, formats, out)
    write_formats("compare", c, target, formats)
    return target.paths()


def open_comparison(after: Path | Bundle, formats: list[str], out: Path | None) -> OutputTarget:
    """Where the comparison goes: the AFTER bundle's directory (or the directory of AFTER's
    report.json), or ``out``."""
    if isinstance(after, Path) and is_report_file(after):
        return open_output(
            open_directory(after.parent, create=False), formats, out, file_names("compare")
        )
    bundle = after if isinstance(after, Bundle) else Bundle.open(after)
    return open_output(bundle, formats, out, file_names("compare"))
