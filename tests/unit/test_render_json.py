"""report.json against its documentation (docs/report-json.md): every field the report of a
real bundle holds is documented, and every documented field exists."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from diagnose.app.report import diagnose
from tests.conftest import FIXTURES, ROOT

DOC = ROOT / "docs" / "report-json.md"


def documented() -> set[str]:
    """The paths in the first column of the doc's field tables."""
    paths = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([a-z_][^`]*)` \|", line)
        if m:
            paths.add(m.group(1))
    return paths


def walk(value: Any, path: str, doc: set[str], seen: set[str], empty: set[str]) -> None:
    """Record each path of ``value`` in ``seen``; go below it only where the doc documents
    more. Paths of what is empty or null go to ``empty`` too."""
    seen.add(path)
    below = [d for d in doc if d.startswith(path + ".") or d.startswith(path + "[]")]
    if not below and path:
        return
    if isinstance(value, dict):
        if not value:
            empty.add(path)
        open_map = f"{path}.*" in doc or any(d.startswith(f"{path}.*.") for d in doc)
        for key, child in value.items():
            walk(child, f"{path}.*" if open_map else f"{path}.{key}".lstrip("."), doc, seen, empty)
    elif isinstance(value, list):
        if not value:
            empty.add(path)
        for child in value:
            walk(child, f"{path}[]", doc, seen, empty)
    elif value is None:
        empty.add(path)


@pytest.fixture(scope="module")
def report() -> dict:
    rep = diagnose(FIXTURES / "bundles" / "lock_contention").report
    return json.loads(json.dumps(rep, allow_nan=False))  # what report.json holds


def test_every_field_is_documented(report):
    doc = documented()
    seen: set[str] = set()
    walk(report, "", doc, seen, set())
    # a path is documented itself, or it is an object/array whose members are
    undocumented = {
        p
        for p in seen - doc
        if p and not any(d.startswith(p + ".") or d.startswith(p + "[]") for d in doc)
    }
    assert sorted(undocumented) == []


def test_every_documented_field_exists(report):
    doc = documented()
    seen: set[str] = set()
    empty: set[str] = set()
    walk(report, "", doc, seen, empty)
    # fields inside what is empty in this report (no broken rules, say) cannot be checked here
    missing = [
        d
        for d in doc - seen
        if not any(d.startswith(e + ".") or d.startswith(e + "[]") for e in empty)
    ]
    assert sorted(missing) == []


def test_schema_is_versioned(report):
    assert report["schema"] == "diagnose.report/1"
    assert "`schema` | string | `diagnose.report/1`" in DOC.read_text(encoding="utf-8")


def test_metrics_are_null_exactly_where_unmeasured_says_why(report):
    nulls = {k for k, v in report["metrics"].items() if v is None}
    assert nulls == set(report["unmeasured"])
