"""False and true sharing rules over the sampled-register metrics (collector false_sharing)
and perf c2c's, with near misses; and that either source rules the bottleneck out alone."""

from __future__ import annotations

from tests.unit.rulekit import UNKNOWN, expect, fired, healthy, verdict, when

REGS_RULE = "memory_bandwidth.false_sharing_regs"
TRUE_RULE = "memory_bandwidth.true_sharing"

RUNNING = {
    "busy_threads_mean": 1.9,
    "threads_busy": 2,
    "busy_share_running": 0.85,
    "busy_share_runnable": 0.15,
    "busy_share_lock": 0.0,
    "busy_share_gil": 0.0,
    "busy_share_io": 0.0,
    "oncpu_share_other": 0.95,
    "process_cpu_share": 0.9,
}
#: the false-sharing sample as measured: two threads, two fields, 97% of the samples
FALSE = {
    **RUNNING,
    "false_sharing_lines": 1,
    "false_sharing_share": 0.97,
    "false_sharing_top_line": "0x55d0c6f7e080",
    "false_sharing_top_share": 0.97,
    "false_sharing_top_offsets": 2,
    "false_sharing_top_threads": 2,
    "false_sharing_top_site": "lock add qword ptr [rax], 1 in worker+0x18 (fs_counters)",
    "false_sharing_coverage": 1.0,
}
TRUE = {
    **RUNNING,
    "true_sharing_lines": 1,
    "true_sharing_share": 0.95,
    "true_sharing_top_address": "0x55d0c6f7e0c0",
    "true_sharing_top_share": 0.95,
    "true_sharing_top_threads": 2,
    "true_sharing_top_site": "lock add qword ptr [rip + 0x2e3f], 1 in worker+0x30 (fs_counters)",
}


def test_two_threads_on_two_fields_of_a_hot_line_is_false_sharing():
    v = expect(healthy(**FALSE), "memory_bandwidth", "false_sharing")
    f = v.findings[0]
    assert f.rule.id == REGS_RULE
    assert "2 threads write 2 different fields of the 64-byte line 0x55d0c6f7e080" in f.summary
    assert any("alignas(64)" in x for x in f.fixes)
    assert any("np.zeros((workers, 8), np.int64)" in x for x in f.fixes)
    assert TRUE_RULE not in fired(healthy(**FALSE))


def test_one_address_of_several_threads_is_true_sharing_with_its_own_fix():
    v = expect(healthy(**TRUE), "memory_bandwidth", "true_sharing")
    f = v.findings[0]
    assert f.rule.id == TRUE_RULE and "0x55d0c6f7e0c0" in f.summary
    assert any("Shard the shared counter" in x for x in f.fixes)
    assert REGS_RULE not in fired(healthy(**TRUE))


def test_near_misses():
    for change in (
        {"false_sharing_top_threads": 1},  # one thread
        {"false_sharing_top_offsets": 1},  # one field: that is true sharing, not this
        {"false_sharing_lines": 0},
        {"false_sharing_share": 0.05, "false_sharing_top_share": 0.05},  # not where time goes
        # threads mostly blocked on a lock: whatever the line costs, it is not the bottleneck
        {"busy_share_running": 0.2, "busy_share_runnable": 0.1, "busy_share_lock": 0.7},
        {"busy_threads_mean": 0.1},  # idle
    ):
        assert when(REGS_RULE, healthy(**{**FALSE, **change})) is False, change
    for change in (
        {"true_sharing_top_threads": 1},
        {"true_sharing_top_share": 0.05},
        {"busy_share_running": 0.2, "busy_share_runnable": 0.1, "busy_share_io": 0.7},
    ):
        assert when(TRUE_RULE, healthy(**{**TRUE, **change})) is False, change


def test_threads_waiting_for_a_core_still_count_as_wanting_to_run():
    # on a crowded host the writers mostly wait for a core: the pattern is still reported,
    # with a score that follows the running share (scheduling tells the bigger story)
    m = healthy(**{**FALSE, "busy_share_running": 0.2, "busy_share_runnable": 0.8})
    assert when(REGS_RULE, m) is True
    f = next(f for f in verdict(m).findings if f.rule.id == REGS_RULE)
    assert abs(f.score - 0.2 * 0.97) < 1e-9


def test_without_the_collector_the_rules_are_not_evaluated():
    m = healthy(**{**FALSE, "false_sharing_lines": None, "false_sharing_share": None})
    assert when(REGS_RULE, m) is UNKNOWN


def compute_bound_without(*prefixes: str) -> dict:
    """A compute-bound process whose metrics starting with ``prefixes`` were not measured."""
    gone = dict.fromkeys(k for k in healthy() if k.startswith(prefixes))
    return healthy(**{**RUNNING, "oncpu_share_compute": 0.85, "oncpu_share_other": 0.1, **gone})


def test_c2c_alone_rules_false_and_true_sharing_out():
    # GIVEN a PMU host where perf c2c ran and found nothing, and --false-sharing was not given
    v = verdict(compute_bound_without("false_sharing_", "true_sharing_"))
    assert v.primary == "compute"
    # THEN the register rules are not evaluated but memory bandwidth is not "not ruled out"
    assert {n.rule.id for n in v.not_evaluated} >= {REGS_RULE, TRUE_RULE}
    assert not any("memory_bandwidth" in n for n in v.confidence_notes), v.confidence_notes


def test_the_registers_alone_rule_false_sharing_out_without_a_pmu():
    # GIVEN a VM without a PMU: c2c's metrics are null, the register collector found nothing
    v = verdict(compute_bound_without("c2c_"))
    assert v.primary == "compute"
    assert "memory_bandwidth.false_sharing" in {n.rule.id for n in v.not_evaluated}
    assert not any("memory_bandwidth" in n for n in v.confidence_notes), v.confidence_notes


def test_neither_source_leaves_it_open():
    m = compute_bound_without("c2c_", "false_sharing_", "true_sharing_")
    assert any("could not rule out memory_bandwidth" in n for n in verdict(m).confidence_notes)


def test_c2c_one_offset_is_the_true_sharing_finding():
    c2c = {
        **RUNNING,
        "c2c_lines_contended": 1, "c2c_hitm_load_share": 0.4,
        "c2c_top_line_address": "0x20ea08034080", "c2c_top_line_hitm_share": 0.9,
        "c2c_top_line_offsets": 1, "c2c_top_line_threads": 4, "c2c_top_line_symbols": "inc",
    }  # fmt: skip
    assert {"memory_bandwidth.true_sharing_c2c"} <= fired(healthy(**c2c))
    assert "memory_bandwidth.false_sharing" not in fired(healthy(**c2c))
    both = fired(healthy(**{**c2c, "c2c_top_line_offsets": 2}))
    assert "memory_bandwidth.false_sharing" in both
    assert "memory_bandwidth.true_sharing_c2c" not in both


def test_both_sources_are_shown_with_the_cross_check():
    c2c = {
        "c2c_lines_contended": 1, "c2c_hitm_load_share": 0.5,
        "c2c_top_line_address": "0x55d0c6f7e080", "c2c_top_line_hitm_share": 1.0,
        "c2c_top_line_offsets": 2, "c2c_top_line_threads": 2, "c2c_top_line_symbols": "worker",
    }  # fmt: skip
    v = verdict(healthy(**FALSE, **c2c, false_sharing_c2c_agrees=1))
    ids = [f.rule.id for f in v.findings]
    assert "memory_bandwidth.false_sharing" in ids and REGS_RULE in ids
    regs = next(f for f in v.findings if f.rule.id == REGS_RULE)
    agree = next(e for e in regs.evidence if e["metric"] == "false_sharing_c2c_agrees")
    assert agree["value"] == 1
