"""Rule files (``rules/*.toml``): loading and validating them. Rule files are data.

A rule::

    [[rule]]
    id = "lock.shared_lock"            # unique; a --rules DIR rule with the same id replaces it
    category = "lock"                  # preprocess|lock|scheduling|compute|memory_bandwidth|io|idle
    kind = "mutex"                     # optional: gil, oversubscription, migration, ...
    title = "Threads queue on one lock"
    when = "lock_top_waiters >= 2 and lock_top_share >= 0.2"   # a condition over metrics
    score = "lock_top_share * 2"       # strength 0..1 (clamped); default 0.5
    evidence = ["lock_top_waiters", "lock_top_share"]           # metrics to show
    summary = "{lock_top_waiters} threads waited on lock {lock_top_address}"
    fixes = ["Give each worker its own model instance ...", "..."]
    explain = "Why these measurements mean this."
    advisory = false                   # true: reported, but never the primary verdict

Every bad rule is reported with ``file:line`` and a message; ``when``/``score`` go through
:mod:`diagnose.verdict.expr` (no eval), messages through :mod:`diagnose.verdict.template`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.analyse.registry import known_metrics
from diagnose.errors import BadRules
from diagnose.resources import rules_dir
from diagnose.tomlfile import TomlFile
from diagnose.verdict.expr import Compiled, ExprError, compile_expr
from diagnose.verdict.template import Template, TemplateError, compile_template

CATEGORIES = ("preprocess", "lock", "scheduling", "compute", "memory_bandwidth", "io", "idle")
DATA_FILES = {"frames.toml"}  # files under rules/ that are not rule files
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_KEYS = {
    "id", "category", "kind", "title", "when", "score", "evidence", "summary", "fixes",
    "explain", "advisory", "references", "measures",
}  # fmt: skip
MAX_RULES_PER_FILE = 500
MAX_FIXES = 20


@dataclass
class Rule:
    id: str
    category: str
    kind: str | None
    title: str
    when: Compiled
    score: Compiled | None
    evidence: list[str]
    summary: Template
    fixes: list[Template]
    explain: str
    advisory: bool
    source: str  # file:line
    references: list[str] = field(default_factory=list)
    #: what it measures: rules that measure the same (by default, of one category and kind)
    #: are alternative measurements, and one evaluated rules the bottleneck out for all
    measures: str | None = None

    @property
    def measure(self) -> str:
        return self.measures or f"{self.category}/{self.kind}"

    @property
    def metrics(self) -> frozenset[str]:
        names = set(self.when.names) | set(self.evidence)
        if self.score is not None:
            names |= self.score.names
        return frozenset(names)


@dataclass
class BrokenRule:
    where: str  # file:line
    id: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.id + ': ' if self.id else ''}{self.message}"


@dataclass
class RuleSet:
    rules: list[Rule]
    broken: list[BrokenRule]
    sources: list[str]


def _str(
    d: Mapping[str, Any], key: str, where: str, required: bool = True, limit: int = 2000
) -> str:
    v = d.get(key)
    if v is None:
        if required:
            raise BadRules(f"{where}: missing {key!r}")
        return ""
    if not isinstance(v, str):
        raise BadRules(f"{where}: {key!r} must be a string")
    if len(v) > limit:
        raise BadRules(f"{where}: {key!r} is longer than {limit} characters")
    return v


def _str_list(raw: dict[str, Any], key: str, tf: TomlFile, line: int, what: str) -> list[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRules(f"{tf.where(tf.key_line(key, line))}: {key} must be a list of {what}")
    return list(value)


def _rule_identity(
    raw: dict[str, Any], tf: TomlFile, line: int, where: str
) -> tuple[str, str, str | None]:
    """A rule's id, category and kind, checked (and its keys, all known)."""
    unknown = set(raw) - _KEYS
    if unknown:
        k = sorted(unknown)[0]
        raise BadRules(f"{tf.where(tf.key_line(k, line))}: unknown key {k!r}")
    rid = _str(raw, "id", where, limit=64)
    if not _ID.match(rid):
        raise BadRules(
            f"{tf.where(tf.key_line('id', line))}: id {rid!r} must be lower-case letters, digits, . _ -"
        )
    category = _str(raw, "category", where)
    if category not in CATEGORIES:
        raise BadRules(
            f"{tf.where(tf.key_line('category', line))}: category {category!r} is not one of {', '.join(CATEGORIES)}"
        )
    kind = raw.get("kind")
    if kind is not None and (not isinstance(kind, str) or not _ID.match(kind)):
        raise BadRules(
            f"{tf.where(tf.key_line('kind', line))}: kind must be a short lower-case name"
        )
    return rid, category, kind


def _parse_rule(raw: Any, tf: TomlFile, index: int, known: Mapping[str, Any]) -> Rule:
    line = tf.table_line("rule", index)
    where = tf.where(line)
    if not isinstance(raw, dict):
        raise BadRules(f"{where}: [[rule]] must be a table")
    rid, category, kind = _rule_identity(raw, tf, line, where)
    title = _str(raw, "title", where, limit=200)

    def expr(key: str, required: bool) -> Compiled | None:
        text = _str(raw, key, where, required=required)
        if not text:
            return None
        try:
            return compile_expr(text, known)
        except ExprError as exc:
            raise BadRules(f"{tf.where(tf.key_line(key, line))}: {key}: {exc}") from None

    when = expr("when", True)
    assert when is not None
    score = expr("score", False)
    evidence = _str_list(raw, "evidence", tf, line, "metric names")
    for e in evidence:
        if e not in known:
            raise BadRules(
                f"{tf.where(tf.key_line('evidence', line))}: unknown metric {e!r} in evidence"
            )

    def tmpl(text: str, key: str) -> Template:
        try:
            return compile_template(text, known)
        except TemplateError as exc:
            raise BadRules(f"{tf.where(tf.key_line(key, line))}: {key}: {exc}") from None

    summary = tmpl(_str(raw, "summary", where), "summary")
    fixes_raw = _str_list(raw, "fixes", tf, line, "strings")
    if len(fixes_raw) > MAX_FIXES:
        raise BadRules(f"{tf.where(tf.key_line('fixes', line))}: at most {MAX_FIXES} fixes")
    fixes = [tmpl(f, "fixes") for f in fixes_raw]
    advisory = raw.get("advisory", False)
    if not isinstance(advisory, bool):
        raise BadRules(f"{tf.where(tf.key_line('advisory', line))}: advisory must be true or false")
    refs = _str_list(raw, "references", tf, line, "strings")
    measures = raw.get("measures")
    if measures is not None and not (isinstance(measures, str) and _ID.match(measures)):
        raise BadRules(f"{tf.where(tf.key_line('measures', line))}: measures must be a name")
    return Rule(
        id=rid,
        category=category,
        kind=kind,
        title=title,
        when=when,
        score=score,
        evidence=list(evidence),
        summary=summary,
        fixes=fixes,
        explain=_str(raw, "explain", where, required=False, limit=4000),
        advisory=advisory,
        source=where,
        references=list(refs),
        measures=measures,
    )


def load_file(
    path: Path, known: Mapping[str, Any] | None = None
) -> tuple[list[Rule], list[BrokenRule]]:
    """Rules of one file, and the broken ones (a broken file is one broken entry)."""
    known = known_metrics() if known is None else known
    try:
        tf = TomlFile.load(path)
    except BadRules as exc:
        return [], [BrokenRule(str(exc).split(": ", 1)[0], "", str(exc).split(": ", 1)[-1])]
    raw_rules = tf.data.get("rule", [])
    extra = set(tf.data) - {"rule"}
    broken: list[BrokenRule] = []
    if extra:
        broken.append(
            BrokenRule(
                f"{path}:1",
                "",
                f"unknown top-level key(s): {', '.join(sorted(extra))} (expected [[rule]] tables)",
            )
        )
    if not isinstance(raw_rules, list):
        return [], [
            *broken,
            BrokenRule(f"{path}:1", "", "'rule' must be an array of tables ([[rule]])"),
        ]
    if len(raw_rules) > MAX_RULES_PER_FILE:
        return [], [*broken, BrokenRule(f"{path}:1", "", f"more than {MAX_RULES_PER_FILE} rules")]
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        try:
            rules.append(_parse_rule(raw, tf, i, known))
        except BadRules as exc:
            msg = str(exc)
            where, _, rest = msg.partition(": ")
            rid = (
                raw.get("id", "")
                if isinstance(raw, dict) and isinstance(raw.get("id"), str)
                else ""
            )
            broken.append(BrokenRule(where, rid[:64], rest))
    return rules, broken


def rule_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise BadRules(f"rules directory {directory} does not exist")
    return sorted(p for p in directory.glob("*.toml") if p.name not in DATA_FILES)


def load_rules(extra_dirs: Iterable[Path] = ()) -> RuleSet:
    """Built-in rules, then each extra directory's, a later rule replacing one of equal id."""
    by_id: dict[str, Rule] = {}
    broken: list[BrokenRule] = []
    sources: list[str] = []
    for directory in [rules_dir(), *extra_dirs]:
        sources.append(str(directory))
        for path in rule_files(directory):
            rules, bad = load_file(path)
            broken.extend(bad)
            for r in rules:
                by_id[r.id] = r
    return RuleSet(list(by_id.values()), broken, sources)


def check_dir(directory: Path) -> tuple[int, list[BrokenRule]]:
    """(number of good rules, broken rules) of one directory, for `diagnose rules check`."""
    good = 0
    broken: list[BrokenRule] = []
    files = rule_files(directory)
    if not files and not (directory / "frames.toml").is_file():
        raise BadRules(f"{directory} has no .toml rule files")
    for path in files:
        rules, bad = load_file(path)
        good += len(rules)
        broken.extend(bad)
    seen: dict[str, str] = {}
    for path in files:
        for r in load_file(path)[0]:
            if r.id in seen:
                broken.append(
                    BrokenRule(r.source, r.id, f"duplicate id (first defined at {seen[r.id]})")
                )
            seen.setdefault(r.id, r.source)
    if (directory / "frames.toml").is_file():
        from diagnose.analyse.frames import load_frame_rules

        try:
            load_frame_rules(directory / "frames.toml")
        except BadRules as exc:
            where, _, rest = str(exc).partition(": ")
            broken.append(BrokenRule(where, "", rest))
    return good, broken
