"""The threshold-sensitivity benchmark's parts on hand-built rules and batches: which numbers
of a rule are thresholds, a moved one still compiles, and which blind services count."""

from __future__ import annotations

from pathlib import Path

from benchmarks.sensitivity import Cell, _thresholds, blind_cases, document
from diagnose.verdict.expr import compile_expr

WHEN = (
    "busy_threads_mean >= 0.25 and oncpu_share_preprocess >= 0.2 * (1 - oncpu_share_other)"
    " and not (gil_holder_preprocess_share > 0.5) and pool_threads + 1 >= 3"
)


def test_thresholds_are_comparands_and_their_factors_not_structural_numbers():
    found = list(_thresholds("r", WHEN))
    # 0.25, 0.2 (the factor), 0.5 and 3; not the 1 of "1 - x", not the 1 added to a metric
    assert [t.value for t in found] == [0.25, 0.2, 0.5, 3.0]
    assert found[1].context == "oncpu_share_preprocess >= 0.2 * (1 - oncpu_share_other)"
    moved = found[1].moved(WHEN, 1.3)
    assert "0.26 * (1 - oncpu_share_other)" in moved and "0.25 and" in moved
    metrics = {
        "busy_threads_mean": 1.0,
        "oncpu_share_preprocess": 0.25,
        "oncpu_share_other": 0.0,
        "gil_holder_preprocess_share": 0.0,
        "pool_threads": 2,
    }
    # the same metrics pass the rule as it is and fail it with the factor moved past them
    assert compile_expr(WHEN)(metrics) is True
    assert compile_expr(moved)(metrics) is False


def _service(batch: Path, bundles: Path, sid: str, label: str) -> None:
    (batch / sid).mkdir(parents=True)
    (batch / sid / "label.toml").write_text(label)
    (bundles / f"{sid}.bundle" / "proc").mkdir(parents=True)


def test_a_blind_batch_counts_its_kept_services_only(tmp_path):
    batch, bundles = tmp_path / "b9", tmp_path / "score"
    _service(batch, bundles, "s01", 'category = "lock"\nkind = "mutex"\n')
    _service(batch, bundles, "s02", 'category = "idle"\nkind = "idle"\n')
    _service(batch, bundles, "s03", 'category = "io"\nkind = "dependency"\n')
    (batch / "README.md").write_text("| table |\n\nKept ids: s01, s02 (2).\n")
    cases = {c.name: c for c in blind_cases(f"{batch}:{bundles}")}
    assert sorted(cases) == ["b9/s01", "b9/s02"]  # s03: dropped by the README
    assert cases["b9/s01"].right("lock", "mutex") and not cases["b9/s01"].right("lock", "gil")
    assert cases["b9/s02"].right("idle", None)  # idle has no kinds
    # the list under a heading, as batch 4's README has it
    (batch / "README.md").write_text("## Kept ids\n\ns02\n")
    assert [c.name for c in blind_cases(f"{batch}:{bundles}")] == ["b9/s02"]


def test_the_table_counts_knife_edges():
    t = next(iter(_thresholds("lock.contended", "lock_top_share >= 0.2")))
    rows = [(t, [Cell(["b/s01 (idle/None)", "b/s02 (idle/None)"], []), Cell([], ["b/s03"])])]
    doc = document(rows, [0.7, 1.3], 3, {"b/s03": "compute/kernels"})
    assert doc.startswith("Baseline: 2/3 right (wrong: b/s03 (compute/kernels))")
    assert "| lock.contended | `lock_top_share >= 0.2` | -2 | +1 |" in doc
    assert "1 thresholds; 1 turn 2 or more right verdicts wrong at a factor" in doc


def test_identities_are_not_thresholds_and_shares_stop_at_one():
    when = "service_processes == 1 and host_cpu_util >= 0.8 and runq_to_oncpu_ratio >= 1"
    found = list(_thresholds("r", when, frozenset({"host_cpu_util"})))
    assert [(t.value, t.share) for t in found] == [(0.8, True), (1.0, False)]
    doc = document([(found[0], [Cell([], []), None])], [0.7, 1.3], 1, {})
    assert "| r | `host_cpu_util >= 0.8` | 0 | n/a |" in doc
