"""The large tables as Parquet once captured (diagnose/bundle/columnar.py): what is
converted, that the analysis reads the same frames and writes the same report from either
format, and that a table which does not convert stays CSV with the reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from diagnose.app.report import diagnose
from diagnose.bundle import Bundle
from diagnose.bundle.compaction import COMPACTED, compact_tables, parquet_name
from diagnose.bundle.manifest import CSV_GUARDED, Manifest
from diagnose.bundle.safedir import SafeDir
from diagnose.bundle.writer import BundleWriter
from diagnose.errors import BadBundle
from diagnose.escape import csv_cell
from tests.conftest import FIXTURES, ROOT

FIXTURE = FIXTURES / "bundles" / "lock_contention"


def _writer(root: Path) -> BundleWriter:
    return BundleWriter(SafeDir.open(root))


def _copy_fixture(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(FIXTURE, root)
    return root


def _report(root: Path) -> dict:
    report = json.loads(json.dumps(diagnose(root).report, default=str))
    report.pop("generated", None)
    report.pop("bundle", None)
    return report


def test_the_analysis_gives_the_same_report_from_parquet_tables(tmp_path):
    # GIVEN the fixture bundle, and a copy whose tables were rewritten as Parquet
    csv_root = _copy_fixture(tmp_path / "a")
    pq_root = _copy_fixture(tmp_path / "b")
    record = compact_tables(_writer(pq_root), "parquet")
    converted = set(record["parquet"])
    assert converted == {rel for rel in COMPACTED if (FIXTURE / rel).exists()}, record
    assert not record["kept"]
    for rel in converted:
        assert not (pq_root / rel).exists() and (pq_root / parquet_name(rel)).exists()
        assert (
            record["parquet"][rel]["parquet_bytes"] == (pq_root / parquet_name(rel)).stat().st_size
        )
    # THEN every table reads back as the same frame, and the report is the same
    with Bundle.open(csv_root) as a, Bundle.open(pq_root) as b:
        for rel in converted:
            assert b.has(rel)
            pd.testing.assert_frame_equal(a.table(rel, []), b.table(rel, []), obj=rel)
    assert _report(pq_root) == _report(csv_root)


def test_auto_converts_only_the_large_tables(tmp_path):
    root = _copy_fixture(tmp_path)
    sizes = {rel: (root / rel).stat().st_size for rel in COMPACTED if (root / rel).exists()}
    cut = sorted(sizes.values())[len(sizes) // 2]
    record = compact_tables(_writer(root), "auto", min_bytes=cut)
    assert set(record["parquet"]) == {rel for rel, n in sizes.items() if n >= cut}
    assert 0 < len(record["parquet"]) < len(sizes)
    for rel, n in sizes.items():
        assert (root / rel).exists() == (n < cut), rel
    # csv: nothing is touched
    assert compact_tables(_writer(root), "csv")["parquet"] == {}


def test_text_cells_come_back_exact_from_parquet(tmp_path):
    # GIVEN a guarded table with formulas, empty cells and a row cut short by a kill
    root = tmp_path / "b"
    root.mkdir()
    names = ["=1+2", "@x", "plain", "", "it's", "-1"]
    lines = ["t,tid,comm,state"] + [
        f"{i * 0.05},{100 + i},{csv_cell(n)},{'R' if i % 2 else ''}" for i, n in enumerate(names)
    ]
    (root / "proc").mkdir()
    (root / "proc" / "threads.csv").write_text("\n".join(lines) + "\n0.3,106,tor")
    (root / "manifest.json").write_text(json.dumps(Manifest("1", csv_text=CSV_GUARDED).to_dict()))
    before = Bundle.open(root).table("proc/threads.csv", ["tid"])
    # WHEN the table is rewritten as Parquet
    record = compact_tables(_writer(root), "parquet")
    assert list(record["parquet"]) == ["proc/threads.csv"]
    after = Bundle.open(root).table("proc/threads.csv", ["tid"])
    # THEN the same rows (the torn one dropped), the same names, the same missing values
    pd.testing.assert_frame_equal(before, after)
    assert after["comm"].fillna("").tolist() == names
    assert after["state"].isna().tolist() == [i % 2 == 0 for i in range(len(names))]


def test_a_table_that_does_not_convert_stays_csv_and_says_why(tmp_path):
    root = tmp_path / "b"
    (root / "sched").mkdir(parents=True)
    (root / "sched" / "futex.csv").write_bytes(b"t,tid\n0.1,\xff\xfe\n")  # not UTF-8
    (root / "sched" / "offcpu.csv").write_text("t,tid\n0.1,1\n")
    record = compact_tables(_writer(root), "parquet")
    assert list(record["parquet"]) == ["sched/offcpu.csv"]
    assert "UnicodeDecodeError" in record["kept"]["sched/futex.csv"]
    assert (root / "sched" / "futex.csv").exists()
    assert not (root / "sched" / "futex.parquet").exists()
    assert sorted(p.name for p in (root / "sched").iterdir()) == ["futex.csv", "offcpu.parquet"]


@pytest.mark.parametrize("damage", [b"", b"PAR1 not a parquet file", b"\x00" * 64])
def test_a_damaged_parquet_table_is_a_one_line_bad_bundle(tmp_path, damage):
    root = _copy_fixture(tmp_path)
    compact_tables(_writer(root), "parquet")
    (root / "proc" / "threads.parquet").write_bytes(damage)
    with Bundle.open(root) as b, pytest.raises(BadBundle) as err:
        b.table("proc/threads.csv", ["t"])
    assert "proc/threads.parquet" in str(err.value) and "\n" not in str(err.value)


def test_a_bundle_with_no_large_table_is_compacted_without_pandas(tmp_path):
    # a worker's capture beside its service (--no-report) must not pay pandas' import
    root = tmp_path / "b"
    (root / "sched").mkdir(parents=True)
    (root / "sched" / "offcpu.csv").write_text("t,tid\n0.1,1\n")
    code = (
        "import sys; from pathlib import Path\n"
        "from diagnose.bundle.compaction import compact_tables\n"
        "from diagnose.bundle.writer import BundleWriter\n"
        "from diagnose.bundle.safedir import SafeDir\n"
        f"w = BundleWriter(SafeDir.open(Path({str(root)!r})))\n"
        "r = compact_tables(w, 'auto')\n"
        "print(sorted(r['parquet']), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["[]", "False"], out.stderr[-2000:]
