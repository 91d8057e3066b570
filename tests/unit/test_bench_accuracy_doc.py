"""docs/accuracy.md's table from hand-built rows: per sample the verdicts, the host's other
load split into the sample's own load generator and neighbours, and the scores."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.accuracy import Target, document, write


def test_the_table_splits_the_host_s_load_by_whose_it_is():
    ts = [Target("svc", "zoo", "fastapi", "preprocess", ("cpu",))]
    rows = [
        {"sample": "svc", "category": "preprocess", "kind": "cpu", "confidence": 0.8,
         "right": True, "ranking": [], "host_foreign_cpu_share": 0.5,
         "host_client_cpu_share": 0.45, "host_neighbour_cpu_share": 0.05},
        {"sample": "svc", "category": "scheduling", "kind": "cpu_contention", "confidence": 0.6,
         "right": False, "ranking": [("scheduling", "cpu_contention", 0.6),
                                     ("preprocess", "cpu", 0.5)],
         "host_foreign_cpu_share": 0.7, "host_client_cpu_share": None,
         "host_neighbour_cpu_share": None},
    ]  # fmt: skip
    args = argparse.Namespace(names=[], captures=2, duration=10.0)
    doc = document(rows, ts, args, Path("accuracy-x.jsonl"))
    row = next(line for line in doc.splitlines() if line.startswith("| svc |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == ("preprocess/cpu 0.80; scheduling/cpu_contention 0.60 ✗ (expected ranked 2)")
    # medians over the captures that measured each: the second predates the split
    assert cells[4:9] == ["0.60", "0.45", "0.05", "1/2", "1/2"]
    header = next(line for line in doc.splitlines() if line.startswith("| sample |"))
    assert header.count("|") == row.count("|")
    total = next(line for line in doc.splitlines() if line.startswith("| **all**"))
    assert total.count("|") == row.count("|")


def test_writing_the_table_keeps_the_hand_written_sections(tmp_path: Path):
    # GIVEN a document with the blind batches' calibration and known misses written by hand
    out = tmp_path / "accuracy.md"
    out.write_text(
        "# old table\n\n## Calibration\n\n### On services it had not seen (blind)\n\n"
        "ECE 0.1 by hand\n\n### On the zoo\n\nold bands\n\n## Known misses\n\nby hand\n"
    )
    args = argparse.Namespace(names=[], captures=1, duration=10.0)
    ts = [Target("svc", "zoo", "fastapi", "idle", ())]
    rows = [{"sample": "svc", "category": "idle", "kind": None, "confidence": 0.9,
             "right": True, "ranking": []}]  # fmt: skip
    write(document(rows, ts, args, Path("accuracy-x.jsonl")), out)
    text = out.read_text()
    # THEN both stay, in their places, and the generated parts are new
    assert "old table" not in text and "old bands" not in text
    blind, zoo = text.index("ECE 0.1 by hand"), text.index("### On the zoo")
    assert text.index("## Calibration") < blind < zoo < text.index("## Known misses")
    assert text.count("### On the zoo") == 1 and text.endswith("by hand\n")
