"""False and true sharing found from sampled registers, on the real samples (no PMU needed).

Each case runs a sample (samples/false_sharing_native.py in its four layouts, the NumPy
service and its padded fix), captures it for 10 s with every collector this host supports
plus ``false_sharing``, and checks the report. The contrasts are structural (which threads
write which addresses), not thresholds: the padded and private layouts write one line per
thread whatever the host's load. Only the verdict's rank depends on the load: on a shared
host other processes can take most of the cores, and the analysis then rightly puts
scheduling (cpu_contention) first; the sharing finding must then come right after it.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from diagnose.app.report import diagnose
from diagnose.bundle import Bundle
from diagnose.collect.base import CaptureOptions
from diagnose.collect.perf.false_sharing import ADDR_REGS
from diagnose.collect.registry import with_collector
from diagnose.collect.session import capture
from diagnose.formats import x86
from tests.conftest import run_sample

pytestmark = pytest.mark.skipif(
    shutil.which("perf") is None or not (shutil.which("gcc") or shutil.which("cc")),
    reason="needs perf (apt-get install -y linux-perf) and gcc (the samples compile C)",
)
CAPTURE_S = 10.0
#: verdicts that say the host, or diagnose itself, took the cores: the sample's own
#: bottleneck then ranks right after them
CROWDED = {("scheduling", "cpu_contention"), ("scheduling", "observer_effect")}


def captured(tmp: Path, sample: str, *args: str, warmup: float = 1.5) -> dict[str, Any]:
    with run_sample(sample, *args, seconds=CAPTURE_S + 40, warmup=warmup) as s:
        options = CaptureOptions(
            duration=CAPTURE_S, collectors=with_collector(None, "false_sharing")
        )
        capture(s.pid, tmp / "bundle", options, follow_children=False)
    bundle = Bundle.open(tmp / "bundle")
    rec = bundle.collector("false_sharing")
    assert rec.status.value == "ok", (rec.status, rec.reason)
    report = diagnose(tmp / "bundle").report
    report["_bundle"] = str(tmp / "bundle")
    return report


def finding(report: dict[str, Any], rule: str) -> dict[str, Any] | None:
    return next((f for f in report["findings"] if f["id"] == rule), None)


def first_but_for_a_crowded_host(report: dict[str, Any]) -> tuple[str, str | None]:
    ranking = [(r["category"], r["kind"]) for r in report["verdict"]["ranking"]]
    rest = [c for c in ranking if c not in CROWDED]
    return rest[0] if rest else ("unknown", None)


@pytest.fixture(scope="module")
def adjacent(tmp_path_factory) -> dict[str, Any]:
    return captured(tmp_path_factory.mktemp("adjacent"), "false_sharing_native")


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> dict[str, Any]:
    return captured(tmp_path_factory.mktemp("service"), "false_sharing_service", warmup=2.5)


def test_adjacent_counters_are_false_sharing_with_their_line_offsets_and_threads(adjacent):
    # GIVEN two workers whose {items, bytes} slots (16 bytes each) share one 64-byte line
    m = adjacent["metrics"]
    # THEN the line is found, with both threads and their four fields
    f = finding(adjacent, "memory_bandwidth.false_sharing_regs")
    assert f is not None, [x["id"] for x in adjacent["findings"]]
    assert first_but_for_a_crowded_host(adjacent) == ("memory_bandwidth", "false_sharing")
    assert (m["false_sharing_top_threads"], m["false_sharing_top_offsets"]) == (2, 4)
    assert m["false_sharing_top_share"] >= 0.5  # the workers do little else
    assert m["true_sharing_lines"] == 0
    (line, *_) = adjacent["extra"]["false_sharing"]["lines"]
    assert line["line"] == m["false_sharing_top_line"] and f["summary"].count(line["line"]) == 1
    assert [fd["offset"] for fd in line["fields"]] == [0, 8, 16, 24]
    assert sorted(t["name"] for t in line["threads"]) == ["worker-0", "worker-1"]
    assert [len(fd["threads"]) for fd in line["fields"]] == [1, 1, 1, 1]
    site = line["fields"][0]["sites"][0]
    assert site["text"].startswith("lock add qword ptr")
    assert site["function"].startswith("run+") and "false_sharing_counters.c:" in site["source"]


def test_the_bundle_keeps_only_address_registers(adjacent):
    # the other registers may hold the target's data: a row keeps only those that address
    # memory in the instruction sampled or the one before it (perf's skid), decoded again
    # here from the code bytes the bundle keeps
    fs = Path(adjacent["_bundle"]) / "false_sharing"
    code = json.loads((fs / "code.json").read_text())["ips"]
    with (fs / "samples.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    kept_any = False
    for row in rows:
        kept = {r for r in ADDR_REGS if row[r]}
        c = code.get(row["ip"])
        if c is None:  # a kernel sample, or code that could not be read
            assert not kept, row
            continue
        prev = int(c["prev"], 16) if c["prev"] else None
        pair = x86.decode_pair(
            bytes.fromhex(c["code"]), int(c["start"], 16), int(row["ip"], 16), prev
        )
        assert kept <= x86.needed_regs(pair), (row, pair)
        kept_any = kept_any or bool(kept)
    assert kept_any  # the locked add's slot pointer, at least


@pytest.mark.parametrize("layout", ["--pad", "--private"])
def test_one_line_per_thread_is_no_sharing(tmp_path, layout):
    report = captured(tmp_path, "false_sharing_native", layout)
    m = report["metrics"]
    assert (m["false_sharing_lines"], m["true_sharing_lines"]) == (0, 0)
    assert report["extra"]["false_sharing"]["lines"] == []
    ids = {f["id"] for f in report["findings"]}
    assert not ids & {"memory_bandwidth.false_sharing_regs", "memory_bandwidth.true_sharing"}
    # the same instructions were decoded and their addresses computed: nothing was missed
    assert m["false_sharing_coverage"] >= 0.95


def test_one_shared_counter_is_true_sharing_not_false_sharing(tmp_path):
    report = captured(tmp_path, "false_sharing_native", "--shared")
    m = report["metrics"]
    f = finding(report, "memory_bandwidth.true_sharing")
    assert f is not None, [x["id"] for x in report["findings"]]
    assert finding(report, "memory_bandwidth.false_sharing_regs") is None
    assert first_but_for_a_crowded_host(report) == ("memory_bandwidth", "true_sharing")
    assert m["false_sharing_lines"] == 0 and m["true_sharing_top_threads"] == 2
    assert m["true_sharing_top_address"] in f["summary"]
    assert any("Shard the shared counter" in x for x in f["fixes"])


def test_the_numpy_service_is_false_sharing_in_its_stats_array(service):
    # GIVEN Python workers whose per-worker rows of one int64 array are written from C
    m = service["metrics"]
    f = finding(service, "memory_bandwidth.false_sharing_regs")
    assert f is not None, [x["id"] for x in service["findings"]]
    assert first_but_for_a_crowded_host(service) == ("memory_bandwidth", "false_sharing")
    assert (m["false_sharing_top_threads"], m["false_sharing_top_offsets"]) == (2, 4)
    assert "score_request+" in m["false_sharing_top_site"]
    assert "false_sharing_stats.c:" in m["false_sharing_top_site"]
    (line, *_) = service["extra"]["false_sharing"]["lines"]
    # the Python threads' names, from py-spy (the kernel knows them all as "python")
    assert sorted(t["name"] for t in line["threads"]) == ["worker-0", "worker-1"]
    assert [len(fd["threads"]) for fd in line["fields"]] == [1, 1, 1, 1]


def test_the_numpy_service_padded_has_no_shared_line(tmp_path):
    report = captured(tmp_path, "false_sharing_service", "--pad", warmup=2.5)
    m = report["metrics"]
    assert (m["false_sharing_lines"], m["true_sharing_lines"]) == (0, 0)
    assert finding(report, "memory_bandwidth.false_sharing_regs") is None


def test_a_target_that_exits_mid_capture_keeps_its_lines(tmp_path):
    # GIVEN the adjacent-counters sample, which exits about 7 s into a 15 s capture
    with run_sample("false_sharing_native", seconds=9, warmup=1.5) as s:
        options = CaptureOptions(duration=15, collectors=with_collector(None, "false_sharing"))
        capture(s.pid, tmp_path / "bundle", options, follow_children=False)
    bundle = Bundle.open(tmp_path / "bundle")
    rec = bundle.collector("false_sharing")
    # THEN the collector is partial (the target exited), its code came from the mapped file
    assert rec.status.value == "partial" and "exited" in rec.reason, (rec.status, rec.reason)
    assert rec.details["code_from"] == {"file": rec.details["ips_with_code"]}
    # and the line is still found, with both threads
    m = diagnose(tmp_path / "bundle").report["metrics"]
    assert (m["false_sharing_top_threads"], m["false_sharing_top_offsets"]) == (2, 4)
