"""Judging: evaluate every rule over the metrics, rank the findings, pick a verdict.

- A rule *fires* when its condition is true; its score (0..1) ranks it.
- A rule whose condition is *unknown* (a metric it needs was not measured) is listed as not
  evaluated, with the metrics and the collectors' reasons.
- The primary verdict is the category of the best non-advisory finding, except that an
  ``idle`` finding always wins: a process that was not busy has no bottleneck, whatever a
  rule without a busy-time guard says. With no finding it is ``unknown`` with confidence
  0: diagnose does not invent a bottleneck.
- Confidence = the primary finding's score, times 0.85 for each other category whose rules
  could not be evaluated (that alternative could not be ruled out; floor 0.4 of the
  score; rules of one category and kind are alternative measurements of one bottleneck,
  e.g. false sharing from perf c2c or from sampled registers: one that was evaluated rules
  it out for the others), times 0.9 if a collector its own metrics come from was partial, times 0.8 if a
  finding of another category scores within 80% of it (a close call). Each factor is a
  note in the report, naming the metrics and the collector that was missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from diagnose.analyse.registry import known_metrics
from diagnose.verdict.expr import UNKNOWN
from diagnose.verdict.ruleset import Rule, RuleSet
from diagnose.verdict.template import format_value


@dataclass
class Finding:
    rule: Rule
    score: float
    summary: str
    fixes: list[str]
    evidence: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        r = self.rule
        return {
            "id": r.id,
            "category": r.category,
            "kind": r.kind,
            "title": r.title,
            "score": round(self.score, 3),
            "advisory": r.advisory,
            "summary": self.summary,
            "evidence": self.evidence,
            "fixes": self.fixes,
            "explain": r.explain,
            "rule_source": r.source,
        }


@dataclass
class NotEvaluated:
    rule: Rule
    missing: list[str]  # metrics
    reasons: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule.id,
            "category": self.rule.category,
            "kind": self.rule.kind,
            "title": self.rule.title,
            "missing_metrics": self.missing,
            "reasons": self.reasons,
        }


@dataclass
class Verdict:
    primary: str
    kind: str | None
    confidence: float
    headline: str
    findings: list[Finding]
    not_evaluated: list[NotEvaluated]
    broken_rules: list[str]
    confidence_notes: list[str] = field(default_factory=list)

    def ranking(self) -> list[dict[str, Any]]:
        """Categories in order of their best finding's score."""
        best: dict[str, Finding] = {}
        for f in self.findings:
            if f.rule.advisory:
                continue
            cur = best.get(f.rule.category)
            if cur is None or f.score > cur.score:
                best[f.rule.category] = f
        return [
            {"category": c, "kind": f.rule.kind, "score": round(f.score, 3), "rule": f.rule.id}
            for c, f in sorted(best.items(), key=lambda kv: -kv[1].score)
        ]


def _evidence(rule: Rule, metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    known = known_metrics()
    out = []
    for name in rule.evidence:
        d = known.get(name)
        v = metrics.get(name)
        out.append(
            {
                "metric": name,
                "value": v,
                "display": _display(v, d.unit if d else ""),
                "unit": d.unit if d else "",
                "description": d.description if d else "",
            }
        )
    return out


def _display(v: Any, unit: str) -> str:
    if v is None:
        return "not measured"
    if unit == "share" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return f"{v:.0%}"
    s = format_value(v)
    if not unit or unit in ("text", "bool", "ratio", "share"):
        return s
    if unit == "1/s":
        return f"{s}/s"
    if s == "1" and unit.endswith("s") and "/" not in unit and "-" not in unit:
        unit = unit[:-1]  # 1 thread, 1 core
    return f"{s} {unit}"


def _lacking(items: list[NotEvaluated]) -> str:
    """'rule x needs m1, m2 (perf unavailable: ...)' for the rules of one category."""
    parts = []
    for n in items:
        why = "; ".join(n.reasons)
        parts.append(f"{n.rule.id} needs {', '.join(n.missing)}" + (f" ({why})" if why else ""))
    return "; ".join(parts)


def _no_verdict(
    findings: list[Finding], not_eval: list[NotEvaluated], broken: list[str]
) -> Verdict:
    if not_eval:
        headline = (
            "No rule matched, and "
            f"{len(not_eval)} could not be evaluated for lack of data: the bottleneck may be "
            "one diagnose could not measure here (see what was not measured)."
        )
        notes = [f"not evaluated: {_lacking(not_eval)}"]
    else:
        headline = "No rule matched: the measurements do not point to one bottleneck."
        notes = ["no finding; see the thread states and flame graph for what the process does"]
    return Verdict(
        primary="unknown",
        kind=None,
        confidence=0.0,
        headline=headline,
        findings=findings,
        not_evaluated=not_eval,
        broken_rules=broken,
        confidence_notes=notes,
    )


def judge(
    ruleset: RuleSet,
    metrics: Mapping[str, Any],
    unmeasured: Mapping[str, str],
    partial: set[str] | None = None,
) -> Verdict:
    partial = partial or set()
    known = known_metrics()
    findings: list[Finding] = []
    not_eval: list[NotEvaluated] = []
    evaluated: set[tuple[str, str | None]] = set()  # (category, kind) of rules judged
    for rule in ruleset.rules:
        result = rule.when(metrics)
        if result is UNKNOWN:
            missing = sorted(n for n in rule.when.names if metrics.get(n) is None)
            reasons = sorted({unmeasured.get(n, "not measured") for n in missing})
            not_eval.append(NotEvaluated(rule, missing, reasons))
            continue
        evaluated.add((rule.category, rule.kind))
        if result is not True:
            continue
        score = 0.5
        if rule.score is not None:
            s = rule.score(metrics)
            if isinstance(s, (int, float)) and not isinstance(s, bool):
                score = float(s)
            elif s is True:
                score = 1.0
        score = max(0.0, min(1.0, score))
        findings.append(
            Finding(
                rule=rule,
                score=score,
                summary=rule.summary.render(metrics),
                fixes=[f.render(metrics) for f in rule.fixes],
                evidence=_evidence(rule, metrics),
            )
        )
    findings.sort(key=lambda f: (f.rule.advisory, -f.score, f.rule.id))
    main = [f for f in findings if not f.rule.advisory]
    idle = [f for f in main if f.rule.category == "idle"]
    if idle:
        main = idle + [f for f in main if f.rule.category != "idle"]
        findings = main + [f for f in findings if f.rule.advisory]
    broken = [str(b) for b in ruleset.broken]
    if not main:
        return _no_verdict(findings, not_eval, broken)
    top = main[0]
    conf = top.score
    notes = [f"score of the top finding {top.rule.id}: {top.score:.2f}"]
    unresolved: dict[str, list[NotEvaluated]] = {}
    for n in not_eval:
        if n.rule.category == top.rule.category or n.rule.advisory:
            continue
        if n.rule.kind is not None and (n.rule.category, n.rule.kind) in evaluated:
            continue  # another measurement of the same bottleneck was made (c2c or registers)
        unresolved.setdefault(n.rule.category, []).append(n)
    factor = 1.0
    for cat in sorted(unresolved):
        factor *= 0.85
        notes.append(f"x0.85: could not rule out {cat}: {_lacking(unresolved[cat])}")
    conf *= max(factor, 0.4)
    sources = {s for m in top.rule.metrics for s in (known[m].sources if m in known else ())}
    part = sorted(sources & partial)
    if part:
        conf *= 0.9
        notes.append(f"x0.9: {', '.join(part)} recorded only part of the window")
    rival = next((f for f in main[1:] if f.rule.category != top.rule.category), None)
    if rival is not None and rival.score >= 0.8 * top.score:
        conf *= 0.8
        notes.append(
            f"x0.8: close call with {rival.rule.category} ({rival.rule.id}, score {rival.score:.2f})"
        )
    return Verdict(
        primary=top.rule.category,
        kind=top.rule.kind,
        confidence=round(conf, 3),
        headline=f"{top.rule.title}: {top.summary}",
        findings=findings,
        not_evaluated=not_eval,
        broken_rules=broken,
        confidence_notes=notes,
    )
