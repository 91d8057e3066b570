"""The report's shape, twice from one place: types for the code, a check for files.

- :class:`Report` and its sections are ``TypedDict``\\ s: the report *is* a JSON document
  (report.json, docs/report-json.md), so its type describes that document as it is, and
  mypy checks every renderer's reads against it (``report["verdict"]["primary"]`` is a
  ``str``; a misspelt key is an error).
- :data:`REPORT` checks a report.json read back (``diagnose report REPORT.json``,
  ``diagnose compare``): a file may come from anyone, so every field the renderers read has
  its type checked first, and a bad one is one line naming it, never a traceback.

The finding-level records (:class:`~diagnose.verdict.engine.FindingDict`, ...) are typed
where they are made, in the verdict engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict, cast

from diagnose.bundle.safedir import read_regular
from diagnose.bundle.schema import (
    ANY,
    BOOL,
    INT,
    NUM,
    STR,
    DictOf,
    ListOf,
    Obj,
    Opt,
    Spec,
    parse_json,
)
from diagnose.errors import BadBundle
from diagnose.verdict.engine import FindingDict, NotEvaluatedDict, RankedDict, UncertainDict

#: report.json's ``schema``: what ``diagnose compare`` and ``diagnose report`` accept
REPORT_SCHEMA = "diagnose.report/1"


class BundleRef(TypedDict):
    path: str
    schema_version: int
    state: str  # complete | capturing
    complete: bool


class VerdictSection(TypedDict):
    primary: str
    title: str
    kind: str | None
    confidence: float
    headline: str
    ranking: list[RankedDict]
    confidence_notes: list[str]
    unexplained_share: float | None
    placed_share: float | None
    uncertain: UncertainDict | None


class RulesRef(TypedDict):
    sources: list[str]
    count: int


class CollectorSummary(TypedDict):
    status: str  # ok | partial | unavailable | failed
    reason: str
    details: dict[str, Any]


class NotMeasured(TypedDict):
    collector: str
    status: str
    reason: str
    impact: str


class GilSection(TypedDict):
    holders: list[list[Any]]  # [name (tid), share], most first
    sites: list[list[Any]]  # [frame, share]


class Report(TypedDict):
    """report.json: the diagnosis as data; every renderer reads this and nothing else."""

    schema: str
    tool_version: str
    generated: str
    bundle: BundleRef
    target: dict[str, Any]  # the manifest's target (bundle.sections.TargetInfo)
    capture: dict[str, Any]  # the manifest's capture, and what measuring cost
    verdict: VerdictSection
    findings: list[FindingDict]
    not_evaluated: list[NotEvaluatedDict]
    broken_rules: list[str]
    rules: RulesRef
    metrics: dict[str, Any]
    unmeasured: dict[str, str]
    collectors: dict[str, CollectorSummary]
    not_measured: list[NotMeasured]
    threads: list[dict[str, Any]]
    roles: list[dict[str, Any]]
    locks: list[dict[str, Any]]
    oncpu: dict[str, Any]
    gil: GilSection
    environment: dict[str, Any]
    series: dict[str, Any]
    stacks: dict[str, Any]
    speedscope: list[str]
    extra: dict[str, Any]
    #: a service of several workers captured together (diagnose/app/service.py): its verdict
    #: and each worker's; {} for one process
    service: dict[str, Any]


class _Share(Spec):
    """``[text, share]``: a GIL holder or site and its share of the samples."""

    what = "a [name, share] pair"

    def check(self, value: Any, where: str) -> None:
        ok = isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
        if not ok or isinstance(value[1], bool) or not isinstance(value[1], (int, float)):
            raise BadBundle(f"{where}: expected {self.what}")


_STRS = ListOf(STR, "a list of strings")
_OBJS = ListOf(Obj(), "a list of objects")
_KIND = Opt(STR)

_EVIDENCE = Obj(
    {"metric": STR, "value": ANY, "display": STR, "unit": STR, "description": STR},
    required=frozenset({"metric", "display"}),
)
_FINDING = Obj(
    {
        "id": STR,
        "category": STR,
        "kind": _KIND,
        "title": STR,
        "score": NUM,
        "advisory": BOOL,
        "summary": STR,
        "evidence": ListOf(_EVIDENCE),
        "fixes": _STRS,
        "explain": STR,
        "rule_source": STR,
    },
    required=frozenset({"id", "category", "title", "score", "summary", "evidence", "fixes"}),
)
_VERDICT = Obj(
    {
        "primary": STR,
        "title": STR,
        "kind": _KIND,
        "confidence": NUM,
        "headline": STR,
        "ranking": ListOf(
            Obj(
                {"category": STR, "kind": _KIND, "score": NUM, "rule": STR},
                required=frozenset({"category", "score", "rule"}),
            )
        ),
        "confidence_notes": _STRS,
        "unexplained_share": Opt(NUM),
        "placed_share": Opt(NUM),
        "uncertain": Opt(
            Obj(
                {"category": STR, "rule": STR, "separate_by": STR},
                required=frozenset({"category", "rule", "separate_by"}),
            )
        ),
    },
    required=frozenset({"primary", "title", "confidence", "headline", "ranking"}),
)

#: what a report.json read back must hold for the renderers and compare (the sections
#: are required; fields inside them are typed when present, as older reports lack some)
REPORT = Obj(
    {
        "schema": STR,
        "tool_version": STR,
        "generated": STR,
        "bundle": Obj(
            {"path": STR, "schema_version": INT, "state": STR, "complete": BOOL},
            required=frozenset({"state", "complete"}),
        ),
        "target": Obj(
            {"pid": INT, "comm": STR, "cmdline": _STRS, "note": STR},
            required=frozenset({"pid", "comm"}),
        ),
        "capture": Obj(
            {"started": STR, "ended_by": Opt(STR), "duration_actual": Opt(NUM), "command": _STRS},
            required=frozenset({"started"}),
        ),
        "verdict": _VERDICT,
        "findings": ListOf(_FINDING),
        "not_evaluated": ListOf(
            Obj(
                {"id": STR, "missing_metrics": _STRS}, required=frozenset({"id", "missing_metrics"})
            )
        ),
        "broken_rules": _STRS,
        "rules": Obj({"sources": _STRS, "count": INT}),
        "metrics": DictOf(ANY),
        "unmeasured": DictOf(STR),
        "collectors": DictOf(
            Obj({"status": STR, "reason": STR, "details": DictOf(ANY)}),
        ),
        "not_measured": ListOf(
            Obj(
                {"collector": STR, "status": STR, "reason": STR, "impact": STR},
                required=frozenset({"collector", "status"}),
            )
        ),
        "threads": _OBJS,
        "roles": ListOf(
            Obj(
                {
                    "role": STR,
                    "threads": INT,
                    "busy_threads": NUM,
                    "shares": DictOf(Opt(NUM)),
                },
                required=frozenset({"role", "shares"}),
            )
        ),
        "locks": ListOf(
            Obj(
                {
                    "address": STR,
                    "waiters": INT,
                    "wait_s": Opt(NUM),
                    "site": STR,
                    "holder": Opt(
                        Obj({"site": STR, "inferred": BOOL}, required=frozenset({"site"}))
                    ),
                },
                required=frozenset({"address", "site"}),
            )
        ),
        "oncpu": DictOf(ANY),
        "gil": Obj({"holders": ListOf(_Share()), "sites": ListOf(_Share())}),
        "environment": DictOf(ANY),
        "series": DictOf(ANY),
        "stacks": DictOf(ANY),
        "speedscope": _STRS,
        "extra": DictOf(ANY),
        "service": DictOf(ANY),
    },
    required=frozenset(
        {
            "bundle",
            "target",
            "capture",
            "verdict",
            "findings",
            "metrics",
            "unmeasured",
            "collectors",
            "not_measured",
            "series",
            "stacks",
        }
    ),
)


# --- a report.json read back ------------------------------------------------------------

#: what a report must hold to be rendered or compared again
REPORT_SECTIONS = (
    "bundle", "target", "capture", "verdict", "findings", "metrics", "unmeasured",
    "collectors", "not_measured", "series", "stacks",
)  # fmt: skip


def is_report_file(path: Path) -> bool:
    """``path`` names a report (a JSON file), not a bundle (a directory)."""
    return path.suffix.lower() == ".json" and not path.is_dir()


#: a report.json with its stacks and series is a few MiB
MAX_REPORT_BYTES = 256 * 1024 * 1024


def load_report(path: Path) -> Report:
    """A report.json that diagnose wrote, read back: what ``diagnose report`` re-renders
    and ``diagnose compare`` compares. :class:`BadBundle` (exit 7) for anything else."""
    try:
        data, _ = read_regular(path, MAX_REPORT_BYTES)
    except OSError as exc:
        raise BadBundle(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadBundle(f"{path}: {exc}") from None
    return parse_report(data, path)


def parse_report(data: bytes, path: Path) -> Report:
    """``data`` checked to be a report.json diagnose wrote (``path`` names it in messages)."""
    try:
        doc = parse_json(data, path.name)
    except BadBundle as exc:
        raise BadBundle(f"{path} is not a report.json: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else None
        raise BadBundle(
            f"{path} is not a diagnose report ({REPORT_SCHEMA}): its schema is {found!r}"
        )
    missing = [k for k in REPORT_SECTIONS if not isinstance(doc.get(k), (dict, list))]
    if missing:
        raise BadBundle(
            f"{path} lacks {', '.join(missing)} (written by diagnose "
            f"{doc.get('tool_version', '?')}?): run diagnose report on its bundle"
        )
    try:  # the type of every field a renderer reads
        REPORT.check(doc, "")
    except BadBundle as exc:
        raise BadBundle(f"{path} is not a usable report: {exc}") from None
    return cast(Report, doc)
