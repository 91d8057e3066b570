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
  it out for the others, unless a rule says it ``measures`` something else), times 0.9 if a collector its own metrics come from was partial, times 0.8 if a
  finding of another category scores within 80% of it (a close call), and times
  ``1.3 - oncpu_share_other`` (floor 0.6) where the top finding rests on what the CPU ran
  (its rule's score or evidence reads an ``oncpu_share_*``, ``kernel_share_*`` or ``gil_holder_*``
  metric) and more than UNEXPLAINED_LARGE of that
  on-CPU time is unexplained: what could not be placed in a stage may be the bottleneck.
  Each factor is a note in the report, naming the metrics and the collector that was
  missing.
- The unexplained share (``oncpu_share_other``) is part of every verdict, whatever rule
  fired, so every report can show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from diagnose.analyse.registry import known_metrics
from diagnose.verdict.expr import UNKNOWN
from diagnose.verdict.ruleset import Rule, RuleSet
from diagnose.verdict.template import format_value

#: above this unexplained on-CPU share, a verdict that rests on the on-CPU composition is
#: less sure (principle: time nobody could place may be the real bottleneck)
UNEXPLAINED_LARGE = 0.3
#: the factor never goes below this (the explained part still says what it says)
UNEXPLAINED_FLOOR = 0.6


class EvidenceDict(TypedDict):
    """One metric a rule names, as the report shows it (docs/report-json.md)."""

    metric: str
    value: float | str | None  # None: not measured
    display: str
    unit: str
    description: str


class FindingDict(TypedDict):
    """A rule that fired, as the report holds it (``findings[]``)."""

    id: str
    category: str
    kind: str | None
    title: str
    score: float
    advisory: bool
    summary: str
    evidence: list[EvidenceDict]
    fixes: list[str]
    explain: str
    rule_source: str


class NotEvaluatedDict(TypedDict):
    """A rule whose metrics were not measured (``not_evaluated[]``)."""

    id: str
    category: str
    kind: str | None
    title: str
    missing_metrics: list[str]
    reasons: list[str]


class RankedDict(TypedDict):
    """A category that fired, with its best rule (``verdict.ranking[]``)."""

    category: str
    kind: str | None
    score: float
    rule: str


class UncertainDict(TypedDict):
    """The runner-up within 80% of the verdict (``verdict.uncertain``)."""

    category: str
    rule: str
    separate_by: str


@dataclass
class Finding:
    rule: Rule
    score: float
    summary: str
    fixes: list[str]
    evidence: list[EvidenceDict]

    def to_dict(self) -> FindingDict:
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

    def to_dict(self) -> NotEvaluatedDict:
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
    #: share of on-CPU time no stage explains (``oncpu_share_other``); None: not measured
    unexplained: float | None = None
    #: where the top two categories are close: the runner-up and the measurement that would
    #: separate them (``uncertain_between``), else None
    uncertain: UncertainDict | None = None

    def ranking(self) -> list[RankedDict]:
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


def _evidence(rule: Rule, metrics: Mapping[str, Any]) -> list[EvidenceDict]:
    known = known_metrics()
    out: list[EvidenceDict] = []
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


def _evaluate(
    ruleset: RuleSet, metrics: Mapping[str, Any], unmeasured: Mapping[str, str]
) -> tuple[list[Finding], list[NotEvaluated], set[str]]:
    """Every rule over the metrics: the findings (scored), the rules that could not be
    evaluated (and why), and what the rules that were measure (:attr:`Rule.measure`)."""
    findings: list[Finding] = []
    not_eval: list[NotEvaluated] = []
    evaluated: set[str] = set()  # what the rules judged measure
    for rule in ruleset.rules:
        result = rule.when(metrics)
        if result is UNKNOWN:
            missing = sorted(n for n in rule.when.names if metrics.get(n) is None)
            reasons = sorted({unmeasured.get(n, "not measured") for n in missing})
            not_eval.append(NotEvaluated(rule, missing, reasons))
            continue
        evaluated.add(rule.measure)
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
    return findings, not_eval, evaluated


def judge(
    ruleset: RuleSet,
    metrics: Mapping[str, Any],
    unmeasured: Mapping[str, str],
    partial: set[str] | None = None,
) -> Verdict:
    partial = partial or set()
    known = known_metrics()
    findings, not_eval, evaluated = _evaluate(ruleset, metrics, unmeasured)
    findings.sort(key=lambda f: (f.rule.advisory, -f.score, f.rule.id))
    main = [f for f in findings if not f.rule.advisory]
    idle = [f for f in main if f.rule.category == "idle"]
    if idle:
        main = idle + [f for f in main if f.rule.category != "idle"]
        findings = main + [f for f in findings if f.rule.advisory]
    broken = [str(b) for b in ruleset.broken]
    if not main:
        none = _no_verdict(findings, not_eval, broken)
        none.unexplained = _unexplained(metrics)
        return none
    top = main[0]
    conf = top.score
    notes = [f"score of the top finding {top.rule.id}: {top.score:.2f}"]
    unresolved: dict[str, list[NotEvaluated]] = {}
    for n in not_eval:
        if n.rule.category == top.rule.category or n.rule.advisory:
            continue
        if n.rule.kind is not None and n.rule.measure in evaluated:
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
    uncertain: UncertainDict | None = None
    if rival is not None and rival.score >= 0.8 * top.score:
        conf *= 0.8
        notes.append(
            f"x0.8: close call with {rival.rule.category} ({rival.rule.id}, score {rival.score:.2f})"
        )
        uncertain = {
            "category": rival.rule.category,
            "rule": rival.rule.id,
            "separate_by": separating_measurement(top.rule.category, rival.rule.category),
        }
    other = _unexplained(metrics, top.rule)
    if other is not None and other > UNEXPLAINED_LARGE and _rests_on_oncpu(top.rule):
        f = max(UNEXPLAINED_FLOOR, 1.3 - other)
        conf *= f
        notes.append(
            f"x{f:.2f}: {other:.0%} of on-CPU time is unexplained (oncpu_share_other: neither "
            "the call structure nor the frames' names placed it in a stage)"
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
        unexplained=other,
        uncertain=uncertain,
    )


def _unexplained(metrics: Mapping[str, Any], rule: Rule | None = None) -> float | None:
    """The on-CPU share no stage or kernel explains; less the array library's loops where
    ``rule``'s score is built from them (they are its explanation)."""
    v = _number(metrics.get("oncpu_share_other"))
    if v is None or rule is None or rule.score is None:
        return v
    if "oncpu_share_array_loops" in rule.score.names:
        v = max(0.0, v - (_number(metrics.get("oncpu_share_other_array_loops")) or 0.0))
    return v


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _rests_on_oncpu(rule: Rule) -> bool:
    """Does the rule's score or evidence read what the CPU ran (an on-CPU or kernel share, or
    what the GIL's holders ran)? A condition that only rules a reading out does not count."""
    names = set(rule.evidence) | (set(rule.score.names) if rule.score is not None else set())
    return any(m.startswith(("oncpu_share_", "kernel_share_", "gil_holder_")) for m in names)


#: for two close categories, the measurement that tells them apart (principle: a close call
#: names the experiment that settles it, not just the doubt). Keyed by the sorted pair.
_SEPARATE: dict[tuple[str, str], str] = {
    (
        "lock",
        "preprocess",
    ): "move the preprocessing out of the request threads (or make it cheaper) and capture again: if the lock waits stay, the lock is the bottleneck; the GIL holders' share in preprocessing (gil_holder_preprocess_share) says which is the cause",
    (
        "preprocess",
        "scheduling",
    ): "capture with fewer threads (or on more cores): if run-queue wait falls and throughput holds, it was scheduling; if preprocessing still fills the cores, it is preprocessing",
    (
        "compute",
        "preprocess",
    ): "time the model call alone (the same inputs, preprocessing cached): its share of request time separates them; with perf, native stacks say which kernels run",
    (
        "compute",
        "scheduling",
    ): "capture with the thread pools sized to the cores (OMP_NUM_THREADS / intra-op threads): if throughput holds or rises, it was oversubscription",
    (
        "lock",
        "scheduling",
    ): "capture with fewer threads than cores: if the lock waits stay, it is the lock; if they vanish with the run-queue waits, the threads were only waiting for cores",
    (
        "compute",
        "memory_bandwidth",
    ): "capture with perf's hardware counters (cycles, instructions, cache misses) available: instructions per cycle and the miss rate separate them",
    (
        "compute",
        "lock",
    ): "capture with perf available: futex waits named by address and holder say whether threads wait for the lock or for the model's kernels",
    (
        "idle",
        "io",
    ): "capture under more load: if threads still wait on a socket with a load generator saturating the service, it is a dependency",
    ("io", "preprocess"): "measure the dependency's latency alone (or mock it) and capture again",
    (
        "io",
        "lock",
    ): "mock the dependency and capture again: the lock waits that remain are the lock's",
}


def separating_measurement(a: str, b: str) -> str:
    """The measurement that tells category ``a`` from ``b`` (a generic one if none is known)."""
    key = (a, b) if a <= b else (b, a)
    return _SEPARATE.get(
        key,
        f"fix what the {a} finding names, capture again and compare: if the {b} finding "
        "grows, it was the second bottleneck behind the first",
    )
