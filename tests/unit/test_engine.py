"""The verdict engine on hand-built metric sets: ranking, the primary category, and how
confidence falls (each factor named in the report)."""

from pathlib import Path

import pytest

from diagnose.verdict import judge, load_rules
from tests.unit.rulekit import RULESET, healthy, verdict
from tests.unit.test_rules_compute_memory import KERNELS
from tests.unit.test_rules_lock import CONTENDED, GIL_BOUND


def team_rules(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "team"
    d.mkdir()
    (d / "team.toml").write_text(text, encoding="utf-8")
    return d


def test_idle_wins_over_a_rule_without_a_busy_guard(tmp_path):
    # GIVEN a team rule that forgets to check that the process was busy
    d = team_rules(
        tmp_path,
        """
[[rule]]
id = "team.compute_always"
category = "compute"
title = "Compute"
when = "oncpu_share_compute >= 0.5"
score = "1"
summary = "compute"
""",
    )
    m = healthy(busy_threads_mean=0.05, oncpu_share_compute=0.9)
    # WHEN an idle process is judged with it
    v = judge(load_rules([d]), m, {})
    # THEN the verdict is idle: a process that was not busy has no bottleneck
    assert v.primary == "idle"
    assert [f.rule.id for f in v.findings][:2] == ["idle.not_busy", "team.compute_always"]


def test_ranking_lists_each_category_once_best_first():
    m = healthy(**{**CONTENDED, "busy_share_gil": 0.3, "gil_waiters_mean": 1.0})
    ranking = verdict(m).ranking()
    assert [r["category"] for r in ranking] == ["lock", "scheduling"]
    assert ranking[0]["rule"] == "lock.contended"  # the lock (0.58) over the GIL (0.3)
    scores = [r["score"] for r in ranking]
    assert scores == sorted(scores, reverse=True)


def test_a_partial_collector_behind_the_verdict_costs_confidence():
    m = healthy(**GIL_BOUND)
    full, part = verdict(m), verdict(m, partial={"proc"})
    assert part.confidence == pytest.approx(full.confidence * 0.9, abs=1e-3)
    assert any("proc recorded only part of the window" in n for n in part.confidence_notes)
    # a partial collector the verdict does not rest on costs nothing
    assert verdict(m, partial={"perf_sched"}).confidence == full.confidence


def test_a_close_call_costs_confidence_and_is_named():
    # I/O waits (0.45) within 80% of the lock (0.5): another category nearly as strong
    m = healthy(**{**CONTENDED, "lock_top_share": 0.5, "busy_share_lock": 0.5,
                   "busy_share_io": 0.45})  # fmt: skip
    m.update(busy_share_runnable=0.02, runq_to_oncpu_ratio=0.3)
    v = verdict(m)
    assert v.primary == "lock" and v.kind == "mutex"
    assert v.confidence == pytest.approx(0.5 * 0.8, abs=1e-3)
    assert any("close call with io" in n for n in v.confidence_notes)


def test_a_second_finding_of_the_same_category_is_no_close_call():
    m = healthy(**{**CONTENDED, "lock_top_share": 0.5, "busy_share_lock": 0.5,
                   "busy_share_gil": 0.45, "gil_waiters_mean": 2.0, "runq_to_oncpu_ratio": 0.3})  # fmt: skip
    v = verdict(m)
    assert {f.rule.id for f in v.findings} == {"lock.contended", "lock.gil"}
    assert v.confidence == 0.5


def test_each_category_that_could_not_be_ruled_out_costs_confidence():
    # GIVEN a compute-bound process where the preprocessing, lock, allocator and run-queue
    # metrics were not measured
    unmeasured = ("oncpu_share_preprocess", "lock_top_share", "lock_top_waiters",
                  "lock_waiters_max", "oncpu_share_allocator", "runq_to_oncpu_ratio")  # fmt: skip
    v = verdict(healthy(**{**KERNELS, **dict.fromkeys(unmeasured)}))
    # THEN compute is still the verdict, at 0.85 per unresolved category, each named
    assert (v.primary, v.kind) == ("compute", "kernels")
    score = v.findings[0].score
    assert v.confidence == pytest.approx(score * 0.85**3, abs=1e-3)
    notes = " ".join(v.confidence_notes)
    for cat in ("lock", "memory_bandwidth", "preprocess"):
        assert f"could not rule out {cat}" in notes
    assert "not measured in this test" in notes
    # scheduling is ruled out although the run-queue ratio is unknown: its rules are false
    # on what was measured (no more CPU-bound threads than cores, CPUs not saturated)
    assert "could not rule out scheduling" not in notes


def test_broken_team_rules_are_listed_not_run(tmp_path):
    d = team_rules(
        tmp_path,
        """
[[rule]]
id = "team.bad"
category = "lock"
title = "Bad"
when = "__import__('os').system('true')"
summary = "x"
""",
    )
    rs = load_rules([d])
    v = judge(rs, healthy(**GIL_BOUND), {})
    assert v.primary == "lock"
    assert len(v.broken_rules) == 1
    assert "team.toml:6" in v.broken_rules[0] and "function call" in v.broken_rules[0]


def test_every_built_in_rule_loads():
    assert RULESET.broken == []
    ids = [r.id for r in RULESET.rules]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("rule", RULESET.rules, ids=lambda r: r.id)
def test_every_rule_explains_itself_and_its_fixes_render_with_numbers(rule):
    # a person at 3 a.m. needs the why and something to do, with this host's numbers in it
    assert rule.explain.strip() and rule.fixes and rule.evidence
    m = healthy()
    text = [rule.summary.render(m), *(f.render(m) for f in rule.fixes)]
    assert not [t for t in text if "n/a" in t], text


# Principle: on-CPU time that nobody could place in a stage may be the real bottleneck, so a
# verdict about what the CPU ran is less sure when much of it is unexplained; and every
# verdict carries the unexplained share, so every report can show it.
def test_a_large_unexplained_share_lowers_a_verdict_about_what_the_cpu_ran():
    base = verdict(healthy(**KERNELS))
    assert base.unexplained == 0.07
    assert not any("unexplained" in n for n in base.confidence_notes)
    v = verdict(healthy(**{**KERNELS, "oncpu_share_other": 0.5}))
    assert v.primary == "compute"
    assert v.unexplained == 0.5
    assert v.confidence == pytest.approx(base.confidence * 0.8, abs=1e-3)
    assert any("50% of on-CPU time is unexplained" in n for n in v.confidence_notes)
    # the factor has a floor: the explained part still says what it says
    v = verdict(healthy(**{**KERNELS, "oncpu_share_other": 0.95}))
    assert v.confidence == pytest.approx(base.confidence * 0.6, abs=1e-3)


def test_near_miss_an_unexplained_share_at_the_threshold_costs_nothing():
    base = verdict(healthy(**KERNELS))
    v = verdict(healthy(**{**KERNELS, "oncpu_share_other": 0.3}))
    assert v.confidence == base.confidence


def test_near_miss_a_verdict_that_does_not_rest_on_the_oncpu_composition_keeps_its_confidence():
    # a contended mutex: what the CPU ran is not the evidence
    m = healthy(**{**CONTENDED, "oncpu_share_other": 0.8})
    v = verdict(m)
    assert v.primary == "lock" and v.kind == "mutex"
    assert v.confidence == verdict(healthy(**CONTENDED)).confidence
    assert v.unexplained == 0.8


def test_a_close_call_says_between_what_and_what_measurement_separates_them():
    m = healthy(**{**CONTENDED, "lock_top_share": 0.5, "busy_share_lock": 0.5,
                   "busy_share_io": 0.45})  # fmt: skip
    m.update(busy_share_runnable=0.02, runq_to_oncpu_ratio=0.3)
    v = verdict(m)
    assert v.uncertain is not None
    assert v.uncertain["category"] == "io"
    assert "mock the dependency" in v.uncertain["separate_by"]
    # near miss: a runner-up below 80% of the top score is no uncertainty
    m.update(busy_share_io=0.39)
    assert verdict(m).uncertain is None
