"""Broken bundles never give a traceback. Every member of a real bundle (the fixed one in
tests/fixtures) is truncated, emptied, filled with garbage, flipped byte by byte or
deleted, and the manifest is fuzzed as JSON; property-based tests do the same at random.
Through the loaders (bundle/manifest.py, reader.py, analyse/load.py) and the whole report
pipeline including every renderer, each outcome is one of two:

- the bundle is still a bundle: the report is written and says which data it could not
  use and why (naming the file);
- it is not one (no manifest, a corrupt manifest, a newer schema): one line on stderr and
  exit code 7.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from diagnose.app.report import write_reports
from diagnose.bundle.manifest import Manifest
from diagnose.bundle.reader import Bundle
from diagnose.cli import main
from diagnose.errors import BadBundle, DiagnoseError
from tests.conftest import FIXTURES, ROOT
from tests.unit.fuzzing import fuzz

SOURCE = FIXTURES / "bundles" / "lock_contention"
MEMBERS = sorted(p.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("*") if p.is_file())
#: the members the analysis reads (the rest are for other tools: speedscope, flame graphs)
READ = {
    "system.json",
    "proc/threads.csv",
    "proc/process.csv",
    "proc/cpus.csv",
    "python/intervals.csv",
    "python/stacks.csv",
    "python/threads.csv",
    "python/gil.folded",
}
FUZZ = fuzz(40)


def _damages(data: bytes, seed: int) -> dict[str, bytes | None]:
    rng = random.Random(seed)
    flipped = bytearray(data)
    for _ in range(max(1, len(data) // 200) if data else 0):  # an empty member stays empty
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    return {
        "deleted": None,
        "empty": b"",
        "first-half": data[: len(data) // 2],
        "cut-mid-line": data[: max(0, len(data) - 7)],
        "garbage": bytes(rng.randrange(256) for _ in range(500)),
        "bytes-flipped": bytes(flipped),
        "nul": b"\0" * 64,
        "wrong-table": b"a,b\n1,2\n",
        "not-numbers": data.replace(b"0", b"x", 50),
    }


CASES = [(rel, kind) for rel in MEMBERS for kind in _damages(b"x", 0)]


def damaged(tmp_path: Path, rel: str, data: bytes | None) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(SOURCE, root)
    if data is None:
        (root / rel).unlink()
    else:
        (root / rel).write_bytes(data)
    return root


def report_cli(bundle: Path, formats: str = "html,md,json") -> tuple[int, list[str]]:
    """``diagnose report BUNDLE`` in this process: (exit code, stderr lines)."""
    res = CliRunner().invoke(main, ["report", str(bundle), "-q", "--format", formats])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception  # a traceback: the test fails with it
    return res.exit_code, res.stderr.strip().splitlines()


@pytest.mark.parametrize(("rel", "kind"), CASES, ids=[f"{r}:{k}" for r, k in CASES])
def test_each_member_damaged_each_way(tmp_path, rel, kind):
    data = _damages((SOURCE / rel).read_bytes(), seed=zlib.crc32(f"{rel}:{kind}".encode()))[kind]
    root = damaged(tmp_path, rel, data)
    code, err = report_cli(root)
    if rel == "manifest.json":
        # THEN not a bundle any more: one line, exit code 7, nothing written
        assert code == 7, err
        assert len(err) == 1 and err[0].startswith("diagnose: error: "), err
        assert not (root / "report.html").exists()
        return
    # THEN still a bundle: every report is written
    assert code == 0, err
    report = json.loads((root / "report.json").read_text())
    assert (root / "report.html").stat().st_size > 0 and (root / "report.md").stat().st_size > 0
    reasons = " ".join(str(v) for v in report["unmeasured"].values())
    if rel in READ and kind in ("garbage", "wrong-table", "nul") and rel != "python/gil.folded":
        # and what could not be used is named, with the file
        assert rel in reasons, reasons[:500]


@pytest.mark.parametrize("rel", ["proc/threads.csv", "proc/process.csv", "python/intervals.csv"])
def test_a_row_cut_short_is_dropped_and_every_complete_row_kept(tmp_path, rel):
    # GIVEN a table whose writer was killed in the middle of its last row
    full = (SOURCE / rel).read_bytes()
    rows = full.rstrip(b"\n").split(b"\n")
    root = damaged(tmp_path, rel, full[: len(full) - len(rows[-1]) // 2 - 2])
    # THEN every complete row is read and the cut one is not
    df = Bundle.open(root).table(rel, ["t"] if rel.startswith("proc") else ["tid"])
    assert len(df) == len(rows) - 2  # the header and the cut row
    assert not df.isna().all(axis=1).any()
    expected = Bundle.open(SOURCE).table(rel, []).iloc[:-1]
    pd.testing.assert_frame_equal(df, expected, check_dtype=False)


def test_a_counter_that_is_not_a_number_leaves_its_metrics_unmeasured(tmp_path):
    # GIVEN process.csv whose last tick holds a CPU counter that is not a number
    lines = (SOURCE / "proc/process.csv").read_text().split("\n")
    header = lines[0].split(",")
    last = lines[-2].split(",")
    last[header.index("utime")] = "oops"
    lines[-2] = ",".join(last)
    root = damaged(tmp_path, "proc/process.csv", "\n".join(lines).encode())
    # THEN the report is written; the CPU metrics of the process are not invented
    assert report_cli(root)[0] == 0
    metrics = json.loads((root / "report.json").read_text())["metrics"]
    assert metrics["process_cpu_cores"] is None and metrics["process_cpu_share"] is None


# -- random damage ----------------------------------------------------------------------
@FUZZ
@given(
    st.sampled_from(sorted(READ)),
    st.one_of(
        st.tuples(st.just("cut"), st.floats(0, 1)),
        st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=3)), min_size=1, max_size=8)),
        st.tuples(st.just("insert"), st.lists(st.tuples(st.floats(0, 1), st.sampled_from([b",", b"\n", b'"', b"nan", b"-1", b"1e999", b"\xff", b"\r\n"])), min_size=1, max_size=8)),
    ),
)  # fmt: skip
def test_random_damage_to_what_the_analysis_reads(tmp_path_factory, rel, damage):
    data = bytearray((SOURCE / rel).read_bytes())
    how, where = damage
    if how == "cut":
        data = data[: int(len(data) * where)]
    else:
        for at, chunk in where:
            i = int(len(data) * at)
            data[i : i + (len(chunk) if how == "flip" else 0)] = chunk
    root = damaged(tmp_path_factory.mktemp("fuzz"), rel, bytes(data))
    try:
        write_reports(root)
    except DiagnoseError as exc:
        # only the manifest may make a bundle unusable; a member never does
        raise AssertionError(f"a damaged {rel} made the whole bundle unusable: {exc}") from exc


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)  # fmt: skip
manifest_like = st.fixed_dictionaries(
    {},
    optional={
        "schema": st.sampled_from(["diagnose.bundle", "other"]),
        "schema_version": st.one_of(st.integers(-2, 3), st.floats(), st.booleans()),
        "state": st.sampled_from(["capturing", "complete", "odd"]),
        "target": json_values,
        "host": json_values,
        "capture": json_values,
        "collectors": st.one_of(
            json_values,
            st.dictionaries(
                st.sampled_from(["proc", "pyspy", "gil", "system", "x"]),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "status": st.sampled_from(["ok", "partial", "failed", "unavailable", "?"]),
                        "reason": json_values,
                        "files": json_values,
                        "details": json_values,
                    },
                ),
            ),
        ),
    },
)


@FUZZ
@given(st.one_of(json_values, manifest_like))
def test_any_manifest_document_is_read_or_rejected_in_one_line(doc):
    try:
        m = Manifest.from_dict(doc)
    except BadBundle as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert m.schema_version >= 1


@FUZZ
@given(st.one_of(st.binary(max_size=300), manifest_like.map(lambda d: json.dumps(d).encode())))
def test_any_manifest_file_opens_or_is_rejected_and_reports_run(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("m") / "bundle"
    shutil.copytree(SOURCE, root)
    (root / "manifest.json").write_bytes(data)
    try:
        Bundle.open(root)
    except BadBundle as exc:
        assert "\n" not in str(exc)
        return
    write_reports(root, ["json", "md"])  # a manifest that opens gives a report


@FUZZ
@given(st.binary(max_size=400), st.lists(st.sampled_from(["t", "tid", "x"]), max_size=3))
def test_any_table_loads_or_is_rejected_in_one_line(tmp_path_factory, data, required):
    root = tmp_path_factory.mktemp("t") / "bundle"
    shutil.copytree(SOURCE, root)
    (root / "proc" / "threads.csv").write_bytes(data)
    b = Bundle.open(root)
    try:
        df = b.table("proc/threads.csv", required, {"t": "float", "tid": "int"})
    except BadBundle as exc:
        assert "\n" not in str(exc) and "proc/threads.csv" in str(exc)
        return
    assert set(required) <= set(df.columns)


# -- a bundle someone else made -----------------------------------------------------------
def test_members_that_point_outside_the_bundle_are_not_read(tmp_path):
    # GIVEN a bundle (received from elsewhere) whose tables are symlinks to host files
    root = damaged(tmp_path, "proc/threads.csv", None)
    (root / "proc" / "threads.csv").symlink_to("/etc/passwd")
    (root / "python" / "stacks.csv").unlink()
    (root / "python" / "stacks.csv").symlink_to("../../../../../../etc/hostname")
    # THEN the report is written without them and says why
    assert report_cli(root)[0] == 0
    text = "".join((root / f).read_text() for f in ("report.json", "report.md", "report.html"))
    assert "root:x:0:0" not in text
    assert "symbolic link" in text and "outside the bundle" in text


def test_reports_are_never_written_through_a_planted_link(tmp_path):
    # GIVEN links planted where the reports' temporary files go, pointing at a file that
    # must not change (root running `diagnose report` on someone else's bundle)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    root = damaged(tmp_path, "proc/cpus.csv", (SOURCE / "proc/cpus.csv").read_bytes())
    for name in ("report.html", "report.md", "report.json"):
        (root / f".{name}.tmp").symlink_to(victim)
    (root / "report.md").symlink_to(victim)  # and the report itself
    assert report_cli(root)[0] == 0
    assert victim.read_text() == "precious\n"
    for name in ("report.html", "report.md", "report.json"):
        p = root / name
        assert p.is_file() and not p.is_symlink() and p.stat().st_mode & 0o077 == 0


# -- issue 17, finding 6: crafted members that raised a traceback on 8e0de8b ----------------
GOOD_C2C = {
    "summary": {"Load Operations": 10000, "Load Local HITM": 40, "Load Remote HITM": 0},
    "details": {},
    "metric": "hitm",
    "lines": [
        {
            "index": 0,
            "address": "0x7f0000001000",
            "hitm": 40,
            "records": 90,
            "accesses": [
                {"offset": "0x0", "tid": 11, "records": 50, "source": "a.c:1"},
                {"offset": "0x8", "tid": 12, "records": 40, "source": "a.c:2"},
            ],
        }
    ],
}


def with_c2c(tmp_path: Path, lines_json: str) -> Path:
    """The fixture bundle with a c2c collector that ran, and ``lines_json`` as its output."""
    root = damaged(tmp_path, "proc/cpus.csv", (SOURCE / "proc/cpus.csv").read_bytes())
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["collectors"]["c2c"] = {
        "status": "ok",
        "reason": "",
        "files": ["c2c/lines.json"],
        "details": {},
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "c2c").mkdir()
    (root / "c2c" / "lines.json").write_text(lines_json)
    return root


def _c2c(edit) -> str:
    doc = json.loads(json.dumps(GOOD_C2C))
    edit(doc)
    return json.dumps(doc)


CRAFTED_C2C = {
    "hitm is text": _c2c(lambda d: d["lines"][0].update(hitm="x")),
    "hitm is 1e400": _c2c(lambda d: d["lines"][0].update(hitm=1)).replace(
        '"hitm": 1', '"hitm": 1e400'
    ),
    "summary is a list": _c2c(lambda d: d.update(summary=[1, 2])),
    "records is text": _c2c(lambda d: d["lines"][0]["accesses"][0].update(records="zz")),
    "lines is text": _c2c(lambda d: d.update(lines="zz")),
    "an access is a list": _c2c(lambda d: d["lines"][0]["accesses"].append([1])),
    "a 4000-digit count": _c2c(lambda d: d["lines"][0].update(hitm=1)).replace(
        '"hitm": 1', '"hitm": 1' + "0" * 4000
    ),
    "NaN": _c2c(lambda d: d["lines"][0].update(hitm=1)).replace('"hitm": 1', '"hitm": NaN'),
}


def test_a_good_c2c_member_is_used(tmp_path):
    # the control: a well-formed c2c/lines.json gives its metrics
    root = with_c2c(tmp_path, json.dumps(GOOD_C2C))
    assert report_cli(root)[0] == 0
    metrics = json.loads((root / "report.json").read_text())["metrics"]
    assert metrics["c2c_lines_contended"] == 1 and metrics["c2c_top_line_threads"] == 2


@pytest.mark.parametrize("case", CRAFTED_C2C)
def test_a_crafted_c2c_member_is_named_not_raised(tmp_path, case):
    root = with_c2c(tmp_path, CRAFTED_C2C[case])
    code, err = report_cli(root, "json,md")  # a traceback fails the test here
    assert code == 0, err
    text = (root / "report.json").read_text()
    assert "c2c/lines.json" in text  # the report says which member it could not use
    assert json.loads(text)["metrics"].get("c2c_lines_contended") is None


NEST = "__nested__"


def nested(doc: object, depth: int) -> str:
    """``doc`` as JSON, its value ``NEST`` replaced by lists and objects ``depth`` deep
    (written as text: json.dumps itself cannot go that deep)."""
    opening = "".join('{"k": ' if i % 2 else "[" for i in range(depth))
    closing = "".join("}" if i % 2 else "]" for i in reversed(range(depth)))
    return json.dumps(doc).replace(f'"{NEST}"', opening + "1" + closing)


def _nest_manifest(root: Path, where: str, depth: int) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    if where == "capture":
        manifest["capture"]["extra"] = NEST
    else:
        manifest["collectors"]["proc"]["details"]["extra"] = NEST
    (root / "manifest.json").write_text(nested(manifest, depth))


def report_process(bundle: Path, formats: str = "json") -> tuple[int, list[str]]:
    """``diagnose report BUNDLE`` in a process of its own, with the stack a user's diagnose
    has (in this process pytest's frames make the JSON parser give up sooner)."""
    res = subprocess.run(
        [sys.executable, "-m", "diagnose", "report", str(bundle), "-q", "--format", formats],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    return res.returncode, res.stderr.strip().splitlines()


@pytest.mark.parametrize("where", ["capture", "details"])
def test_a_manifest_nested_950_levels_deep_is_refused_in_one_line(tmp_path, where):
    root = damaged(tmp_path, "proc/cpus.csv", (SOURCE / "proc/cpus.csv").read_bytes())
    _nest_manifest(root, where, 950)
    code, err = report_process(root)
    assert code == 7, err
    assert len(err) == 1 and "nested too deeply" in err[0], err


@pytest.mark.parametrize("member", ["system.json", "c2c/lines.json"])
def test_a_member_nested_950_levels_deep_is_named_not_raised(tmp_path, member):
    if member == "system.json":
        root = damaged(tmp_path, member, nested({"cpu": {}, "extra": NEST}, 950).encode())
    else:
        root = with_c2c(tmp_path, nested({**GOOD_C2C, "summary": {"x": NEST}}, 950))
    code, err = report_process(root)
    assert code == 0, err
    assert f"{member} is nested too deeply" in (root / "report.json").read_text()


c2c_like = st.fixed_dictionaries(
    {},
    optional={
        "summary": st.one_of(json_values, st.dictionaries(st.text(max_size=20), json_values)),
        "details": json_values,
        "metric": st.one_of(st.sampled_from(["hitm", "peer"]), json_values),
        "lines": st.one_of(
            json_values,
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        k: json_values
                        for k in ("index", "address", "hitm", "records", "share", "accesses")
                    },
                ),
                max_size=3,
            ),
        ),
    },
)


@fuzz(15)
@given(c2c_like)
def test_any_c2c_member_gives_a_report(tmp_path_factory, doc):
    root = with_c2c(tmp_path_factory.mktemp("c2c"), json.dumps(doc))
    write_reports(root, ["json", "md"])  # a member never makes the bundle unusable


@fuzz(15)
@given(
    st.sampled_from(["capture", "details", "system.json", "c2c/lines.json"]),
    st.integers(1, 3000),
)
def test_any_nesting_anywhere_is_read_or_refused_in_one_line(tmp_path_factory, where, depth):
    tmp = tmp_path_factory.mktemp("nest")
    if where in ("capture", "details"):
        root = damaged(tmp, "proc/cpus.csv", (SOURCE / "proc/cpus.csv").read_bytes())
        _nest_manifest(root, where, depth)
    elif where == "system.json":
        root = damaged(tmp, where, nested({"cpu": {}, "extra": NEST}, depth).encode())
    else:
        root = with_c2c(tmp, nested({**GOOD_C2C, "summary": {"x": NEST}}, depth))
    code, err = report_cli(root, "json")
    # the manifest's own levels above the nesting: 2 for capture, 4 for a collector's details
    if where in ("capture", "details") and depth + {"capture": 2, "details": 4}[where] > 32:
        assert code == 7 and len(err) == 1, err
    else:
        assert code == 0, err
