"""How much each rule threshold matters: every labelled capture judged again with one
threshold moved by a factor (default 0.7 and 1.3), the others as they are.

A threshold is a number a rule's ``when`` compares a metric with (``busy_share_gil_all >=
0.2``), or the factor of a metric it compares with (``>= 0.2 * (1 - x)``). Each bundle is
analysed once; judging it again with a changed rule set takes milliseconds, so every
threshold of every rule is tried on every capture. A threshold whose move by 30% turns
right verdicts wrong stands on a knife's edge (issue 39, principle 8): the rule should rest
on a measurement that separates the cases more widely.

The labelled captures are whole bundles with what they should be judged:

- ``--raw RAW.jsonl``: an accuracy run's rows (``python -m benchmarks accuracy
  --keep-bundles``), each sample's expected verdicts as the accuracy table takes them;
- ``--blind BATCH:BUNDLES``: a blind batch's services (``BATCH/sNN/label.toml``, category
  and kind) and the bundles its first-sight scoring kept (``BUNDLES/sNN.bundle``).

  python -m benchmarks sensitivity --raw /tmp/diagnose-bench/accuracy-DATE.jsonl \\
      --blind samples/blind/b3:/work/blind/score/b3-first-sight --out /tmp/sensitivity.md
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from benchmarks.common import append_row, machine_line, results_file


@dataclass(frozen=True)
class Case:
    """One labelled capture: its bundle and the test its verdict must pass."""

    name: str
    bundle: Path
    expected: str
    right: Callable[[str | None, str | None], bool]


@dataclass(frozen=True)
class Cell:
    """What moving one threshold by one factor did: captures turned wrong (with the verdict
    they got) and turned right."""

    lost: list[str]
    won: list[str]


@dataclass(frozen=True)
class Threshold:
    rule: str
    start: int  # the literal's place in the rule's ``when`` source
    end: int
    value: float
    context: str  # the comparison it sits in, for the table
    share: bool = False  # compared with a share: a move past 1 cannot be met, and is not tried

    def moved(self, source: str, factor: float) -> str:
        v = self.value * factor
        return source[: self.start] + repr(round(v, 6)) + source[self.end :]


def raw_cases(raw: Path) -> list[Case]:
    from benchmarks.accuracy import targets

    by_name = {t.name: t for t in targets([])}
    out = []
    for row in (json.loads(ln) for ln in raw.read_text().splitlines() if ln.strip()):
        kept = Path(row.get("kept") or "")
        t = by_name.get(row["sample"])
        if t is None or not (kept / "proc").is_dir():  # a report-only copy: nothing to analyse
            continue
        out.append(Case(f"{row['sample']}-{row.get('capture', 0)}", kept, t.expected, t.right))
    return out


def blind_cases(spec: str) -> list[Case]:
    batch, _, bundles = spec.partition(":")
    kept = _kept_ids(Path(batch) / "README.md")
    out = []
    for label in sorted(Path(batch).glob("s*/label.toml")):
        data = tomllib.loads(label.read_text())
        sid = label.parent.name
        bundle = Path(bundles) / f"{sid}.bundle"
        dropped = "dropped" in str(data.get("verdict", "")) or (kept and sid not in kept)
        if dropped or not (bundle / "proc").is_dir():
            continue
        cat, kind = data["category"], data.get("kind")

        def right(c: str | None, k: str | None, cat: str = cat, kind: str | None = kind) -> bool:
            # idle has no kinds: a label's "idle/idle" is the verdict "idle"
            return c == cat and (kind is None or k == kind or (cat == "idle" and k is None))

        out.append(Case(f"{Path(batch).name}/{sid}", bundle, f"{cat}/{kind}", right))
    return out


def _kept_ids(readme: Path) -> set[str]:
    """The ids a batch's README lists as kept ("Kept ids: s01, s03, ..."); empty if none."""
    lines = (readme.read_text() if readme.is_file() else "").splitlines()
    # "Kept ids: s01, ..." on one line, or under a "## Kept ids" heading (batch 4's README)
    at = next((i for i, ln in enumerate(lines) if ln.lstrip("# ").startswith("Kept ids")), None)
    if at is None:
        return set()
    rest = lines[at].split("Kept ids", 1)[1]
    line = (
        rest if re.search(r"s\d+", rest) else next((ln for ln in lines[at + 1 :] if ln.strip()), "")
    )
    return set(re.findall(r"s\d+", line))


def _thresholds(
    rule: str, source: str, shares: frozenset[str] = frozenset()
) -> Iterator[Threshold]:
    """The numbers a comparison in ``source`` holds a metric against: a comparand, or a
    factor multiplying one. Structural numbers (the 1 of ``1 - x``) and identities (``==``,
    ``!=``) are left alone; ``shares`` names the metrics whose values lie in 0..1."""
    text = source.replace("\n", " ").strip()
    offset = source.index(text[:20]) if text else 0
    tree = ast.parse(text, mode="eval")

    def number(n: ast.AST) -> bool:
        return (
            isinstance(n, ast.Constant)
            and isinstance(n.value, (int, float))
            and not isinstance(n.value, bool)
            and n.value != 0
        )

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            continue
        context = ast.get_source_segment(text, node) or ""
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        share = bool(names) and names <= shares
        for side in (node.left, *node.comparators):
            factors = [side.left, side.right] if isinstance(side, ast.BinOp) else []
            if isinstance(side, ast.BinOp) and not isinstance(side.op, ast.Mult):
                factors = []
            for c in [side, *factors]:
                if isinstance(c, ast.Constant) and number(c):
                    start, end = offset + c.col_offset, offset + (c.end_col_offset or 0)
                    found.append(Threshold(rule, start, end, float(c.value), context, share))
    yield from sorted(found, key=lambda t: t.start)  # in the order they are written


def main(argv: list[str] | None = None) -> None:
    from diagnose.analyse.registry import known_metrics
    from diagnose.app.report import analyse_service, judge_service
    from diagnose.verdict import load_rules
    from diagnose.verdict.expr import compile_expr

    p = argparse.ArgumentParser(prog="python -m benchmarks sensitivity", description=__doc__)
    p.add_argument("--raw", type=Path, action="append", default=[])
    p.add_argument("--blind", action="append", default=[], help="BATCH_DIR:BUNDLES_DIR")
    p.add_argument("--factors", default="0.7,1.3")
    p.add_argument("--out", type=Path, help="write the Markdown table here too")
    args = p.parse_args(argv)
    factors = [float(f) for f in args.factors.split(",")]
    cases = [c for r in args.raw for c in raw_cases(r)]
    cases += [c for b in args.blind for c in blind_cases(b)]
    if not cases:
        sys.exit("no labelled bundle found (an accuracy run needs --keep-bundles)")
    print(f"# machine: {machine_line()}", file=sys.stderr)
    analysed = []
    for c in cases:
        try:
            analysed.append((c, analyse_service(c.bundle)))
        except Exception as exc:  # a bundle that cannot be read is reported, not fatal
            print(f"# {c.name}: not analysed ({type(exc).__name__}: {exc})", file=sys.stderr)
    base = load_rules()
    known = known_metrics()
    shares = frozenset(n for n, m in known.items() if m.unit == "share")

    def score(rules: Any) -> dict[str, str]:
        """The captures judged wrong, with the verdict each got."""
        wrong = {}
        for c, a in analysed:
            rep = judge_service(a, rules).report
            v = (rep.get("service") or {}).get("verdict") or rep["verdict"]
            if not c.right(v.get("primary"), v.get("kind")):
                wrong[c.name] = f"{v.get('primary')}/{v.get('kind')}"
        return wrong

    wrong0 = score(base)
    path = results_file("sensitivity")
    append_row(path, {"of": len(analysed), "wrong": wrong0})
    rows = []
    for i, rule in enumerate(base.rules):
        for t in _thresholds(rule.id, rule.when.source, shares):
            cells: list[Cell | None] = []
            for f in factors:
                if t.share and t.value * f > 1:
                    cells.append(None)
                    continue
                moved = dataclasses.replace(
                    rule, when=compile_expr(t.moved(rule.when.source, f), known)
                )
                rules = dataclasses.replace(
                    base, rules=[*base.rules[:i], moved, *base.rules[i + 1 :]]
                )
                wrong = score(rules)
                cell = Cell(
                    sorted(f"{n} ({v})" for n, v in wrong.items() if n not in wrong0),
                    sorted(n for n in wrong0 if n not in wrong),
                )
                append_row(path, {"rule": t.rule, "at": t.context, "value": t.value, "factor": f,
                                  "newly_wrong": cell.lost, "newly_right": cell.won})  # fmt: skip
                cells.append(cell)
            rows.append((t, cells))
    print(f"# raw rows: {path}", file=sys.stderr)
    doc = document(rows, factors, len(analysed), wrong0)
    print(doc)
    if args.out:
        args.out.write_text(doc)


def _mark(c: Cell | None) -> str:
    if c is None:
        return "n/a"
    return f"{len(c.won) - len(c.lost):+d}" if c.lost or c.won else "0"


def document(
    rows: list[tuple[Threshold, list[Cell | None]]],
    factors: list[float],
    total: int,
    wrong0: dict[str, str],
) -> str:
    head = " | ".join(f"x{f:g}" for f in factors)
    wrong = ", ".join(f"{n} ({v})" for n, v in sorted(wrong0.items()))
    out = [
        f"Baseline: {total - len(wrong0)}/{total} right" + (f" (wrong: {wrong})" if wrong else ""),
        "",
        f"| rule | threshold | {head} | turned wrong | turned right |",
        "|---|---|" + "---|" * len(factors) + "---|---|",
    ]
    edge = 0
    for t, maybe in rows:
        cells = [c for c in maybe if c is not None]
        edge += max((len(c.lost) for c in cells), default=0) >= 2
        marks = " | ".join(_mark(c) for c in maybe)
        lost = ", ".join(sorted({n for c in cells for n in c.lost}))
        won = ", ".join(sorted({n for c in cells for n in c.won}))
        ctx = t.context.replace("|", "\\|")
        out.append(f"| {t.rule} | `{ctx}` | {marks} | {lost} | {won} |")
    out += [
        "",
        f"{len(rows)} thresholds; {edge} turn 2 or more right verdicts wrong at a factor "
        "(n/a: a share moved past 1, which no capture can meet).",
    ]
    return "\n".join(out) + "\n"
