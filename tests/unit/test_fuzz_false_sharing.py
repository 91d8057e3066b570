"""Fuzzing the false-sharing path: any perf script text, any code.json, any code bytes and
any damage to the collector's bundle members give a result or a reason, never a traceback."""

from __future__ import annotations

import csv
import json
import shutil
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.analyse.false_sharing import CodeInfo, SampleRow, analyse_lines, load_code
from diagnose.collect.perf import false_sharing as fs
from diagnose.formats.perf_regs import Lost, RegSample, parse_regs_script
from tests.conftest import FIXTURES
from tests.unit.fuzzing import fuzz
from tests.unit.test_fuzz_bundle import _damages, report_cli
from tests.unit.test_fuzz_parsers import json_values

FUZZ = fuzz(300)
PERF = FIXTURES / "perf"
SOURCE = FIXTURES / "bundles" / "lock_contention"
LINE_OF_PERF = (PERF / "regs-false-sharing.script.txt").read_text().splitlines()[5]


@FUZZ
@given(st.lists(st.text(max_size=200) | st.just(LINE_OF_PERF), max_size=20))
def test_any_perf_script_text_parses_to_samples_or_nothing(lines):
    for rec in parse_regs_script(lines):
        assert isinstance(rec, (RegSample, Lost))


@FUZZ
@given(json_values)
def test_any_code_document_loads(doc):
    code, names = load_code(doc)
    assert isinstance(code, dict) and isinstance(names, dict)


@FUZZ
@given(
    code=st.binary(max_size=40),
    back=st.integers(0, 20),
    regs=st.dictionaries(st.sampled_from(["ax", "di", "r13", "sp"]), st.integers(0, 2**64 - 1)),
    tids=st.lists(st.integers(1, 4), min_size=1, max_size=6),
)
def test_any_code_bytes_and_registers_analyse(code, back, regs, tids):
    ip = 0x1000 + back
    info = CodeInfo(ip, 0x1000, code, 0x1000 if back else None, "sync", "f", back, "/x")
    rows = [SampleRow(t, ip, 5, regs) for t in tids] + [SampleRow(1, None, 3)]
    metrics, table = analyse_lines(rows, {ip: info})
    assert table["samples"] == 5 * len(tids) + 3
    assert 0 <= metrics["false_sharing_share"] <= 1


def bundle_with_false_sharing(tmp: Path) -> Path:
    """The fixed real bundle plus the false_sharing collector's members, from the golden
    recording of the adjacent-counters sample."""
    root = tmp / "bundle"
    shutil.copytree(SOURCE, root)
    text = (PERF / "regs-false-sharing.script.txt").read_text().splitlines()
    read = fs._read_samples(text)
    rows = fs._rows(read, {ip: {"r13"} for ip in read.ip_counts})
    (root / "false_sharing").mkdir()
    with (root / "false_sharing" / "samples.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(fs.SAMPLE_COLUMNS)
        w.writerows(rows)
    shutil.copy(PERF / "regs-false-sharing.code.json", root / "false_sharing" / "code.json")
    man = json.loads((root / "manifest.json").read_text())
    man["collectors"]["false_sharing"] = {
        "status": "ok", "reason": "", "details": {},
        "files": ["false_sharing/samples.csv", "false_sharing/code.json"],
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(man))
    return root


MEMBERS = ["false_sharing/samples.csv", "false_sharing/code.json"]
CASES = [(rel, kind) for rel in MEMBERS for kind in _damages(b"x", 0)]


def test_the_bundle_with_the_collector_reports_its_line(tmp_path):
    root = bundle_with_false_sharing(tmp_path)
    code, err = report_cli(root)
    assert code == 0, err
    report = json.loads((root / "report.json").read_text())
    assert report["metrics"]["false_sharing_lines"] == 1
    assert report["metrics"]["false_sharing_top_threads"] == 2


@pytest.mark.parametrize(("rel", "kind"), CASES, ids=[f"{r}:{k}" for r, k in CASES])
def test_each_member_damaged_each_way(tmp_path, rel, kind):
    root = bundle_with_false_sharing(tmp_path)
    data = (root / rel).read_bytes()
    damage = _damages(data, seed=zlib.crc32(f"{rel}:{kind}".encode()))[kind]
    if damage is None:
        (root / rel).unlink()
    else:
        (root / rel).write_bytes(damage)
    code, err = report_cli(root)
    assert code == 0, err
    report = json.loads((root / "report.json").read_text())
    assert (root / "report.html").stat().st_size > 0
    m = report["metrics"]
    if m["false_sharing_lines"] is None:
        # what could not be used is named, with the file
        assert rel in report["unmeasured"]["false_sharing_lines"], report["unmeasured"]
