"""What `diagnose demo` says about its sample: the verdict it is built to show, the one it
got and, when they differ, why, from what the capture measured (hand-built reports)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from diagnose.demo import available_samples, expectation_lines, sample_expected
from tests.conftest import ROOT


def report(
    primary: str,
    kind: str | None,
    ranking: list[tuple[str, str | None]] | None = None,
    metrics: dict[str, Any] | None = None,
) -> Any:
    return {
        "verdict": {
            "primary": primary,
            "kind": kind,
            "confidence": 0.35,
            "ranking": [
                {"category": c, "kind": k, "score": 0.3, "rule": f"{c}.{k}"}
                for c, k in ranking or [(primary, kind)]
            ],
        },
        "metrics": metrics or {},
        "not_evaluated": [],
    }


LOCK = ("lock/mutex",)


def test_the_expected_verdict_is_said_and_met():
    # GIVEN the lock sample's report with its lock first
    lines = expectation_lines("lock_contention", LOCK, report("lock", "mutex"))
    # THEN the demo says what it expected and that it got it, and no "why"
    assert lines == [
        "Expected: lock/mutex: the bottleneck sample lock_contention is built to show",
        "Got: lock/mutex, as expected",
    ]


def test_an_alternative_expected_kind_counts_as_met():
    lines = expectation_lines(
        "s", ("preprocess/serial", "preprocess/gil"), report("preprocess", "gil")
    )
    assert lines[0].startswith("Expected: preprocess/serial (or preprocess/gil)")
    assert lines[1] == "Got: preprocess/gil, as expected"


def test_an_expectation_without_a_kind_accepts_any_kind_of_its_category():
    assert expectation_lines("s", ("idle",), report("idle", None))[1] == "Got: idle, as expected"


def test_a_busy_host_is_named_with_its_measured_share():
    # GIVEN the case: neighbours held the cores, cpu_contention first, lock second
    busy = report(
        "scheduling",
        "cpu_contention",
        ranking=[("scheduling", "cpu_contention"), ("lock", "mutex")],
        metrics={"host_neighbour_cpu_share": 0.62, "host_neighbour_names": "pytest (4242)"},
    )
    lines = expectation_lines("lock_contention", LOCK, busy)
    # THEN: what it expected, what it got (and where the expected one ranked), and why
    assert lines[0].startswith("Expected: lock/mutex")
    assert lines[1] == "Got: scheduling/cpu_contention (confidence 35%); lock/mutex ranked second"
    assert lines[2].startswith("Why: other processes took 62% of the cores")
    assert "pytest (4242)" in lines[2]
    assert "again on a quiet host" in lines[2]
    assert len(lines) == 3


def test_the_foreign_share_stands_in_when_neighbours_were_not_scanned():
    busy = report("scheduling", "cpu_contention", metrics={"host_foreign_cpu_share": 0.4})
    lines = expectation_lines("lock_contention", LOCK, busy)
    assert lines[1].endswith("lock/mutex not among the findings")
    assert lines[2].startswith("Why: other processes took 40% of the cores")


def test_a_quiet_host_is_not_blamed():
    # GIVEN a wrong verdict while others used 5% of the cores
    quiet = report("io", "dependency", metrics={"host_neighbour_cpu_share": 0.05})
    lines = expectation_lines("lock_contention", LOCK, quiet)
    # THEN the host is cleared by its measured share, not blamed
    assert "Why: other processes took" not in "\n".join(lines)
    assert lines[2].startswith("Why: not the host (other processes took 5% of the cores)")


def test_an_expected_rule_left_unevaluated_is_a_reason():
    # GIVEN a sample whose verdict needs native stacks, perf unavailable, and another
    # collector missing that no expected rule needs
    no_perf = report("compute", "model", metrics={"host_neighbour_cpu_share": 0.0})
    no_perf["not_evaluated"] = [
        {"id": "memory_bandwidth.memory_kernels", "category": "memory_bandwidth",
         "kind": "memory_kernels", "title": "", "missing_metrics": ["memory_kernel_share"],
         "reasons": ["perf unavailable: perf not installed"]},
        {"id": "memory_bandwidth.true_sharing", "category": "memory_bandwidth",
         "kind": "true_sharing", "title": "", "missing_metrics": ["true_sharing_lines"],
         "reasons": ["false_sharing unavailable: not run in this capture"]},
    ]  # fmt: skip
    lines = expectation_lines("s", ("memory_bandwidth/memory_kernels",), no_perf)
    # THEN only the expected rule's missing measurement is the reason given
    assert lines[2] == (
        "Why: the rule that names memory_bandwidth/memory_kernels "
        "(memory_bandwidth.memory_kernels) could not be evaluated: perf unavailable: perf not "
        "installed; `diagnose doctor` says what this host lets each collector do."
    )
    assert len(lines) == 3


def test_a_sample_without_an_expectation_says_nothing():
    assert expectation_lines("s", (), report("lock", "mutex")) == []


def readme_expectations() -> dict[str, set[str]]:
    """samples/README.md's table: sample -> the 'category/kind's of its expected column."""
    table: dict[str, set[str]] = {}
    for row in (ROOT / "samples" / "README.md").read_text().splitlines():
        m = re.match(r"\| `(\w+)\.py` \|.*\| (.*) \|$", row)
        if m:
            pairs = re.findall(r"`(\w+)`(?:, `(\w+)`)?", m.group(2))
            table[m.group(1)] = {f"{c}/{k}" if k else c for c, k in pairs}
    return table


@pytest.mark.parametrize("sample", available_samples())
def test_every_demo_sample_declares_the_verdict_its_readme_row_names(sample):
    # the demo's expectation and the samples' documented table must not drift apart
    declared = sample_expected(sample)
    assert declared, f"{sample}.py has no EXPECTED_VERDICTS"
    assert set(declared) == readme_expectations()[sample]
