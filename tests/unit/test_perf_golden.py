"""Golden-file tests of the perf parsers on real recorded output (tests/fixtures/perf/).

``*.script.txt`` are ``perf script`` outputs recorded on this project's machine (``regs-*``
with the code the false_sharing collector copied, ``regs-*.code.json``); ``c2c-*``
are ``perf c2c report --stdio`` outputs recorded on hardware with memory sampling
(AMD IBS, Intel, Arm SPE) and published elsewhere: each names its source URL in its
header. Regenerate the expected files on purpose with
``python tests/fixtures/perf/regenerate.py`` and review the diff.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

PERF = FIXTURES / "perf"
INPUTS = sorted(PERF.glob("*.txt"))


def _regenerate_module():
    spec = importlib.util.spec_from_file_location("perf_regenerate", PERF / "regenerate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_there_are_inputs_of_each_kind():
    names = {p.name.split("-")[0] for p in INPUTS}
    assert {"c2c", "oncpu", "sched", "regs"} <= names, names


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_parser_output_matches_the_golden_file(path: Path):
    # GIVEN a real recorded output and what the parsers made of it when it was reviewed
    expected_path = path.with_name(path.name.rsplit(".", 2)[0] + ".expected.json")
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    # WHEN it is parsed today THEN the result is the same
    got = json.loads(json.dumps(_regenerate_module().golden(path), sort_keys=True))
    assert got == expected, f"{path.name} parses differently: run regenerate.py and review"


def test_c2c_fixtures_name_their_source():
    for path in PERF.glob("c2c-*.txt"):
        head = path.read_text(encoding="utf-8").splitlines()[:6]
        assert any(line.startswith("## source: https://") for line in head), path.name


#: what each false-sharing recording shows: (false lines, true lines, fields, writers)
REGS_FACTS = {
    "regs-false-sharing": (1, 0, 4, 2),  # two workers' {items, bytes} slots in one line
    "regs-numpy-service": (1, 0, 4, 2),  # two workers' rows of one (workers, 2) int64 array
    "regs-true-sharing": (0, 1, 0, 0),  # one slot written by both
    "regs-padded": (0, 0, 0, 0),  # one line per worker
}


@pytest.mark.parametrize("name", sorted(REGS_FACTS))
def test_the_register_recordings_show_what_their_samples_do(name: str):
    # GIVEN a real recording of a false-sharing sample and the code copied from it
    got = _regenerate_module().golden(PERF / f"{name}.script.txt")
    m = got["metrics"]
    # THEN decoding and grouping find the layout the sample has, and every write's address
    lines, true, fields, writers = REGS_FACTS[name]
    assert (m["false_sharing_lines"], m["true_sharing_lines"]) == (lines, true)
    assert (m["false_sharing_top_offsets"], m["false_sharing_top_threads"]) == (fields, writers)
    assert m["false_sharing_coverage"] == 1.0
    if lines:
        assert "lock add qword ptr" in m["false_sharing_top_site"]
        assert ".c:" in m["false_sharing_top_site"]  # the source line, from DWARF
    if true:
        assert m["true_sharing_top_threads"] == 2
