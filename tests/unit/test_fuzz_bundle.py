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
import random
import shutil
import zlib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from diagnose.bundle.manifest import Manifest
from diagnose.bundle.reader import Bundle
from diagnose.cli import main
from diagnose.errors import BadBundle, DiagnoseError
from diagnose.report import write_reports
from tests.conftest import FIXTURES
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


def report_cli(bundle: Path) -> tuple[int, list[str]]:
    """``diagnose report BUNDLE`` in this process: (exit code, stderr lines)."""
    res = CliRunner().invoke(main, ["report", str(bundle), "-q"])
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
    assert "points outside the bundle" in text


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
