"""The sweep's analysis on hand-built step tables: the knee, the bands, the recommendations,
the best setting. Near misses included: a step that gains just under a quarter of the
proportional QPS does not pay; one just over does."""

from __future__ import annotations

import pytest

from diagnose.sweep.analysis import (
    GAIN_SHARE,
    SettingOutcome,
    StepPoint,
    bands,
    best_setting,
    find_knee,
    p99_change,
    pays,
    recommend,
)


def table(rows):
    """(users, qps, p99) or (users, qps, p99, extra-kwargs) -> StepPoints (p50 = p99 / 2)."""
    out = []
    for row in rows:
        users, qps, p99, *rest = row
        kw = rest[0] if rest else {}
        out.append(
            StepPoint(
                users, qps, p50_ms=None if p99 is None else p99 / 2, p95_ms=p99, p99_ms=p99, **kw
            )
        )
    return out


# the known-peak sample as measured: 4 lanes of 40 ms
POOL = table([(1, 22, 54), (2, 45, 60), (4, 90, 59), (8, 94.6, 140), (16, 98.6, 290)])


def test_knee_of_a_pool_is_where_qps_stops_paying_and_p99_bends():
    knee = find_knee(POOL)
    assert knee.status == "found"
    assert (knee.users, knee.next_users) == (4, 8)
    assert knee.p99_bends is True
    assert knee.p99_bend == pytest.approx(140 / 59, rel=1e-3)
    assert knee.qps_gain_after == pytest.approx(98.6 / 90, rel=1e-3)
    assert "4 users" in knee.text


def test_pays_near_misses():
    # doubling pays when it adds more than a quarter of the proportional gain (25%)
    assert pays(100, 2, 100 * (1 + GAIN_SHARE) + 0.5, 4)
    assert not pays(100, 2, 100 * (1 + GAIN_SHARE) - 0.5, 4)
    # from 4 to 16 users, +75% is the bar
    assert pays(100, 4, 176, 16) and not pays(100, 4, 174, 16)
    assert pays(0, 1, 5, 2) and not pays(0, 1, 0, 2)


def test_a_noisy_dip_before_the_knee_does_not_end_the_curve():
    # GIVEN step 4 measured low (another job on the host) while 8 still doubled step 2
    rows = table([(1, 50, 20), (2, 100, 21), (4, 104, 40), (8, 200, 41), (16, 205, 80)])
    # THEN the knee is where nothing later pays, not the first flat pair
    assert find_knee(rows).users == 8


def test_the_knee_can_be_the_first_step():
    # the oversubscribed default: one client already fills the cores
    rows = table([(1, 22, 320), (2, 18.6, 290), (4, 15.8, 2200), (8, 16.5, 4000)])
    knee = find_knee(rows)
    assert knee.status == "found" and knee.users == 1 and knee.next_users == 2
    assert "first step" in knee.text
    assert "more users only lowered QPS (by 15% or more)" in knee.text  # best later 18.6 / 22


def test_qps_still_rising_at_the_last_step_is_not_a_knee():
    rows = table([(1, 50, 20), (2, 100, 20), (4, 200, 21), (8, 390, 22)])
    knee = find_knee(rows)
    assert knee.status == "not_reached" and knee.users == 8
    assert "add steps" in knee.text
    assert bands(rows, knee) == ["below"] * 4


def test_a_saturated_generator_is_named_instead_of_a_false_knee():
    # GIVEN QPS flat from 8 users, but the generator was the limit there
    rows = table(
        [(1, 50, 20), (2, 100, 20), (4, 200, 21), (8, 230, 36, {"saturated": True}),
         (16, 232, 70, {"saturated": True})]
    )  # fmt: skip
    knee = find_knee(rows)
    assert knee.status == "generator_bound"
    assert knee.users == 4 and "saturated" in knee.text and "8 users" in knee.text
    assert bands(rows, knee) == ["below", "below", "below", "saturated", "saturated"]
    # the same figures without the saturation flag would have drawn a knee at 4
    assert find_knee(table([(u, q, p) for u, q, p, *_ in
                            [(1, 50, 20), (2, 100, 20), (4, 200, 21), (8, 230, 36), (16, 232, 70)]])
                     ).status == "found"  # fmt: skip


def test_saturated_steps_past_a_real_knee_keep_the_knee():
    rows = table([(1, 50, 20), (2, 100, 20), (4, 105, 40), (8, 106, 80, {"saturated": True})])
    knee = find_knee(rows)
    assert knee.status == "found" and knee.users == 2


def test_failed_steps_are_left_out_and_banded():
    rows = [*table([(1, 50, 20), (2, 100, 20)]), StepPoint(4, None, failed=True),
            *table([(8, 104, 80), (16, 103, 160)])]  # fmt: skip
    knee = find_knee(rows)
    assert knee.users == 2 and knee.next_users == 8
    assert bands(rows, knee) == ["below", "knee", "failed", "past", "past"]


def test_too_few_steps():
    rows = [StepPoint(1, 50, p99_ms=20), StepPoint(2, None, failed=True)]
    assert find_knee(rows).status == "too_few_steps"


def test_qps_flat_without_p99_rising_is_flagged():
    # Little's law: flat QPS with flat latency means the requests were not all in flight
    rows = table([(1, 50, 20), (2, 100, 20), (4, 102, 21), (8, 103, 21)])
    knee = find_knee(rows)
    assert knee.users == 2 and knee.p99_bends is False


def test_error_steps_are_banded_and_not_served_at():
    rows = table([(1, 50, 20), (2, 100, 20), (4, 120, 30, {"error_rate": 0.2}), (8, 90, 90)])
    knee = find_knee(rows)
    assert bands(rows, knee)[2] == "errors"
    rec = recommend(rows, knee, sla_p99_ms=50)
    assert rec.users == 2  # the 4-user step met the SLA but failed 20% of its requests


def test_recommendation_at_the_knee_with_capacity_plan():
    # the seeds' example: 150 QPS stable per instance, 1000 QPS peak
    rows = table([(4, 75, 50), (8, 150, 52), (16, 155, 110)])
    rec = recommend(rows, find_knee(rows), peak_qps=1000)
    assert rec.basis == "knee" and rec.users == 8 and rec.qps == 150
    assert rec.safe_qps == 105
    assert (rec.replicas_for_peak, rec.replicas) == (10, 11)
    assert rec.core_threads == (6, 6) and rec.max_threads == (12, 16)
    assert any("11 instances" in t and "1 for failover" in t for t in rec.text)


def test_sla_picks_the_most_qps_within_it():
    rows = table([(1, 22, 54), (2, 45, 60), (4, 90, 120), (8, 94.6, 140), (16, 98.6, 290)])
    knee = find_knee(rows)
    assert knee.users == 4
    rec = recommend(rows, knee, sla_p99_ms=100)
    assert rec.basis == "sla" and rec.users == 2 and rec.sla_met
    # a generous SLA is met past the knee too: the rule the advice states picks the most QPS
    assert recommend(rows, knee, sla_p99_ms=1000).users == 16


# the observed sweep: 2 users were the knee (4 added too little QPS to pay) but 4 users met
# the SLA with more QPS and a lower P99, and the advice named 2
OBSERVED = table([(1, 140.2, 21), (2, 256.8, 76), (4, 275.1, 39), (8, 279.4, 160)])


def test_sla_choice_follows_its_stated_rule_past_the_knee():
    knee = find_knee(OBSERVED)
    assert (knee.users, knee.next_users) == (2, 4)
    rec = recommend(OBSERVED, knee, sla_p99_ms=100)
    # THEN the most QPS among the steps with P99 <= 100 ms: 4 users, not the knee's 2
    assert (rec.users, rec.qps, rec.p99_ms) == (4, 275.1, 39)
    assert rec.text[0] == (
        "serve at 4 concurrent requests (the most QPS with P99 <= 100 ms): 275.1 QPS, "
        "P99 39 ms per instance"
    )
    # and it is the most QPS of every step meeting the bound, whatever the steps
    within = [p for p in OBSERVED if p.stable and (p.p99_ms or 0) <= 100]
    assert rec.qps == max(p.qps or 0 for p in within)


def test_p99_changes_are_worded_by_direction():
    knee = find_knee(OBSERVED)
    assert knee.p99_bend == pytest.approx(39 / 76, rel=1e-3)
    assert "while P99 fell to x0.5 at 4 users" in knee.text
    assert "went" not in knee.text
    assert "while P99 rose x2.4 at 8 users" in find_knee(POOL).text
    assert p99_change(2.06) == "rose x2.1"
    assert p99_change(0.513) == "fell to x0.5"
    assert p99_change(1.02) == "held at x1.0"
    assert p99_change(0.513, 2) == "fell to x0.51"


def test_queue_bound_from_the_sla_budget():
    # P50 at the lowest step 10 ms per request; at 4 users P99 is 40 ms; SLA 100 ms:
    # 60 ms of queueing at 10 ms per request per worker = 6 per worker, 24 in all
    rows = [StepPoint(1, 100, p50_ms=10, p99_ms=12), StepPoint(4, 380, p50_ms=11, p99_ms=40),
            StepPoint(8, 390, p50_ms=20, p99_ms=120)]  # fmt: skip
    rec = recommend(rows, find_knee(rows), sla_p99_ms=100)
    assert rec.users == 4 and rec.queue_bound == 24


def test_a_plateau_within_the_sla_is_served_at_its_fewest_users():
    # a pool of 4 lanes: 8 users give the same QPS as 4 (2 runs of the pool sample: 39.99
    # at both, the raw figures a hair apart either way) at three times the P99
    rows = [StepPoint(1, 10, p50_ms=100, p99_ms=110), StepPoint(4, 39.99, p50_ms=100, p99_ms=100),
            StepPoint(8, 40.3, p50_ms=200, p99_ms=300), StepPoint(16, 39.9, p99_ms=720)]  # fmt: skip
    rec = recommend(rows, find_knee(rows), sla_p99_ms=400)
    assert rec.users == 4 and rec.p99_ms == 100
    # beyond 2% the most QPS wins, whatever its latency within the SLA
    rows[2] = StepPoint(8, 41.0, p50_ms=200, p99_ms=300)
    assert recommend(rows, find_knee(rows), sla_p99_ms=400).users == 8


def test_no_step_meets_the_sla():
    rec = recommend(POOL, find_knee(POOL), sla_p99_ms=10, peak_qps=500)
    assert rec.basis == "none" and rec.sla_met is False and rec.replicas is None
    assert "54 ms at 1 user;" in rec.text[0]


def test_replicas_round_up_and_never_below_one():
    rows = table([(1, 10, 20), (2, 10.5, 40)])
    rec = recommend(rows, find_knee(rows), peak_qps=7)
    assert rec.safe_qps == 7.0 and rec.replicas_for_peak == 1 and rec.replicas == 2
    rec = recommend(rows, find_knee(rows), peak_qps=7.01)
    assert rec.replicas_for_peak == 2


def outcome(name, rows, sla=None):
    knee = find_knee(rows)
    return SettingOutcome(name, knee, recommend(rows, knee, sla_p99_ms=sla))


def test_best_setting_beats_the_baseline_measurably():
    default = table([(1, 22, 320), (2, 18.6, 290), (4, 15.8, 2200), (8, 16.5, 4000)])
    fixed = table([(1, 60, 24), (2, 100, 75), (4, 104, 150), (8, 103, 260)])
    best = best_setting([outcome("INTRA=4", default), outcome("INTRA=1", fixed)])
    assert best["best"] == 1 and best["beats_baseline"] is True
    assert best["rows"][0]["baseline"] and best["rows"][1]["best"]
    assert "INTRA=1 is best" in best["text"] and "x4.55 QPS" in best["text"]


def test_best_setting_within_noise_prefers_lower_p99_and_says_no_measured_gain():
    a = table([(1, 50, 30), (2, 100, 40), (4, 101, 80)])
    b = table([(1, 52, 28), (2, 104, 38), (4, 105, 75)])  # +4% QPS, -5% P99: noise
    best = best_setting([outcome("A", a), outcome("B", b)])
    assert best["best"] == 1 and best["beats_baseline"] is False
    assert "within the noise" in best["text"]


def test_best_setting_with_an_sla_uses_qps_within_it():
    fast_tail = table([(1, 40, 20), (2, 80, 30), (4, 85, 60)])
    more_qps = table([(1, 50, 90), (2, 100, 150), (4, 120, 300)])
    best = best_setting([outcome("tail", fast_tail, sla=100), outcome("qps", more_qps, sla=100)])
    assert best["rows"][1]["qps"] == 50  # within 100 ms only its first step counts
    assert best["best"] == 0 and best["beats_baseline"] is False


def test_best_setting_when_nothing_is_stable():
    rows = [StepPoint(1, None, failed=True), StepPoint(2, None, failed=True)]
    best = best_setting([outcome("x", rows)])
    assert best["best"] is None and best["beats_baseline"] is None
    assert best["text"] == "no setting had a stable step"
