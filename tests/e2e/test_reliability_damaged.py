"""The real command line on damaged bundles (tests/unit/test_fuzz_bundle.py fuzzes every
member in-process): a bundle that is not one any more makes ``diagnose report`` and
``diagnose compare`` exit 7 with one line on stderr and nothing on stdout;
a damaged member of a good bundle gives a report that names what it could not use."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.e2e import test_exit_codes
from tests.e2e.cli import run_cli
from tests.e2e.test_exit_codes import one_line_error

#: the fixture ``bundle``: a real 2 s capture, shared with test_exit_codes.py
bundle = test_exit_codes.bundle


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def _with(bundle: Path, **changes: object) -> str:
    doc = _manifest(bundle)
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc)


MANIFESTS = {
    "truncated early": (lambda b: (b / "manifest.json").read_text()[:40], "corrupt or truncated"),
    "truncated late": (lambda b: (b / "manifest.json").read_text()[:-5], "corrupt or truncated"),
    "empty": (lambda b: "", "corrupt or truncated"),
    "not UTF-8": (lambda b: b"\xff\xfe{}", "not UTF-8"),
    "a list": (lambda b: "[1, 2]", "not a JSON object"),
    "another schema": (lambda b: _with(b, schema="perf.data"), "not a diagnose bundle"),
    "newer schema": (lambda b: _with(b, schema_version=2), "newer than this diagnose"),
    "schema 0": (lambda b: _with(b, schema_version=0), "schema version 0 is unknown"),
    "schema as text": (lambda b: _with(b, schema_version="1"), "no integer schema_version"),
    "no target": (lambda b: _with(b, target=None), "'target' is missing"),
    "odd state": (lambda b: _with(b, state="exploded"), "unknown state"),
    "collectors a list": (lambda b: _with(b, collectors=[]), "'collectors' is not an object"),
    "bad status": (
        lambda b: _with(b, collectors={"proc": {"status": "great"}}),
        "unknown status 'great'",
    ),
    "deep nesting": (lambda b: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
}


@pytest.mark.parametrize("case", MANIFESTS)
def test_a_manifest_that_is_not_one_exits_7_with_one_line(bundle, tmp_path, case):
    broken = tmp_path / "broken"
    shutil.copytree(bundle, broken)
    make, message = MANIFESTS[case]
    data = make(bundle)
    path = broken / "manifest.json"
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
    for args in (["report", str(broken)], ["compare", str(bundle), str(broken), "--json"]):
        res = run_cli(*args)
        assert res.returncode == 7, res.stderr
        assert message in one_line_error(res)
        assert res.stdout == ""
    assert not (broken / "report.html").exists()


@pytest.mark.parametrize(
    "case", ["missing", "a file", "no manifest", "manifest a directory", "huge"]
)
def test_what_is_not_a_bundle_at_all_exits_7(bundle, tmp_path, case):
    target = tmp_path / "b"
    if case == "a file":
        target.write_text("x")
    elif case != "missing":
        shutil.copytree(bundle, target)
        manifest = target / "manifest.json"
        manifest.unlink()
        if case == "manifest a directory":
            manifest.mkdir()
        elif case == "huge":  # sparse: 600 MB that must not be read into memory
            with manifest.open("wb") as fh:
                fh.truncate(600 * 1024 * 1024)
    res = run_cli("report", str(target))
    assert res.returncode == 7, res.stderr
    one_line_error(res)


@pytest.mark.parametrize(
    ("rel", "damage"),
    [
        ("proc/threads.csv", "cut"),
        ("proc/threads.csv", "garbage"),
        ("python/intervals.csv", "garbage"),
        ("python/stacks.csv", "deleted"),
        ("system.json", "cut"),
    ],
)
def test_a_damaged_member_still_gives_a_report_that_says_what_is_missing(
    bundle, tmp_path, rel, damage
):
    broken = tmp_path / "broken"
    shutil.copytree(bundle, broken)
    path = broken / rel
    if damage == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) * 2 // 3])
    elif damage == "garbage":
        path.write_bytes(os.urandom(4096))
    else:
        path.unlink()
    out = tmp_path / "report.json"
    res = run_cli("report", str(broken), "--format", "json", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    report = json.loads(out.read_text())
    reasons = " ".join(str(v) for v in report["unmeasured"].values())
    if damage == "cut" and rel.endswith(".csv"):
        # a table cut short keeps every complete row: nothing is missing
        assert rel not in reasons
        assert report["metrics"]["threads_total"] is not None
    else:
        assert rel in reasons, reasons[:300]
