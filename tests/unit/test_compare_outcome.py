"""compare after a fix, on hand-built analyses: the service's own figures first, the verdict
change in words, and metric directions that make sense for an improvement (diagnose/verdict/outcome.py).

The case is issue 18's: a model lock removed, one-client p50 from 52 ms to 8 ms. Before, the
threads wait on the lock; after, the time they waited goes to running and to queueing for a
core, and the service answers six times the requests per second. Read alone, the scheduler
metrics all look worse."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from diagnose.app.compare import build_comparison
from diagnose.render.compare import (
    render_compare_html,
    render_compare_markdown,
    render_compare_summary,
)
from diagnose.verdict.outcome import figures, service_change, verdict_words

BEFORE_METRICS = {
    "busy_share_lock": 0.75,
    "busy_share_running": 0.20,
    "busy_share_runnable": 0.05,
    "busy_share_gil": 0.0,
    "ctx_switches_involuntary_per_s": 100.0,
    "runq_delay_p50_ms": 0.1,
    "gil_waiters_mean": 0.1,
    "rss_growth_mb_per_min": 1.0,
    "window_s": 5.0,
}
AFTER_METRICS = {
    "busy_share_lock": 0.0,
    "busy_share_running": 0.50,
    "busy_share_runnable": 0.40,
    "busy_share_gil": 0.10,
    "ctx_switches_involuntary_per_s": 600.0,
    "runq_delay_p50_ms": 0.5,
    "gil_waiters_mean": 0.6,
    "rss_growth_mb_per_min": 10.0,
    "window_s": 5.0,
}
SLOW = figures(source="before.csv", qps=19.0, p50_ms=52.0, p99_ms=70.0)
FAST = figures(source="after.csv", qps=120.0, p50_ms=8.0, p99_ms=12.0)


def _finding(rid: str, score: float, advisory: bool = False) -> dict[str, Any]:
    return {"id": rid, "category": rid.split(".")[0], "kind": None, "title": rid,
            "score": score, "summary": "s", "advisory": advisory, "evidence": []}  # fmt: skip


def _side(primary: str, metrics: dict[str, Any], findings: list[dict]) -> dict[str, Any]:
    report = {
        "bundle": {"path": "/b", "complete": True},
        "target": {"pid": 7, "comm": "python", "cmdline": ["python"]},
        "capture": {"started": "2026-01-01T00:00:00", "duration_actual": 5.0,
                    "ended_by": "duration"},
        "verdict": {"primary": primary, "kind": None, "title": primary.capitalize(),
                    "confidence": 0.8, "headline": "h"},
        "findings": findings,
        "metrics": dict(metrics),
        "not_measured": [],
        "stacks": {"frames": [], "views": {}},
    }  # fmt: skip
    return report


def _pair() -> tuple[dict[str, Any], dict[str, Any]]:
    before = _side("lock", BEFORE_METRICS, [_finding("lock.contended", 0.8)])
    after = _side("compute", AFTER_METRICS, [_finding("compute.model_bound", 0.7)])
    return before, after


def _changes(c: dict) -> dict[str, str]:
    return {m["name"]: m["change"] for m in c["metrics"]}


def test_after_a_real_improvement_nothing_that_followed_it_is_worse():
    c = build_comparison(*_pair(), service=(SLOW, FAST))
    # THEN the service's figures say what the fix did
    s = c["service"]
    assert s["outcome"] == "improved"
    rows = {r["name"]: r for r in s["rows"]}
    assert (rows["qps"]["change"], rows["p50_ms"]["change"]) == ("better", "better")
    assert rows["p50_ms"]["display_before"] == "52 ms" and rows["p50_ms"]["display_after"] == "8 ms"
    assert "p95_ms" not in rows  # measured on neither side: not shown
    # the verdict change in words
    assert c["verdict"]["words"] == "the lock contention is gone; now compute-bound"
    ch = _changes(c)
    assert ch["busy_share_lock"] == "better" and ch["busy_share_running"] == "better"
    # the time freed from the lock goes to queueing for a core and to the GIL: moved
    assert ch["busy_share_runnable"] == "moved" and ch["busy_share_gil"] == "moved"
    runnable = next(m for m in c["metrics"] if m["name"] == "busy_share_runnable")
    assert "busy_share_lock (75 pts)" in runnable["why"]
    # switches per second x6 at x6.3 the requests: per request the same
    ctx = next(m for m in c["metrics"] if m["name"] == "ctx_switches_involuntary_per_s")
    assert ctx["change"] == "same" and ctx["per_request"]["after"] == pytest.approx(5.0)
    # pressure that follows the extra work is moved; memory growth is never excused
    assert ch["runq_delay_p50_ms"] == "moved" and ch["gil_waiters_mean"] == "moved"
    assert ch["rss_growth_mb_per_min"] == "worse"
    assert c["counts"]["worse"] == 1 and c["counts"]["better"] == 2


def test_near_miss_the_service_got_slower_so_worse_stays_worse():
    # GIVEN the same internal metrics, but the service's own figures got worse
    c = build_comparison(*_pair(), service=(FAST, SLOW))
    assert c["service"]["outcome"] == "regressed"
    ch = _changes(c)
    assert ch["busy_share_runnable"] == "worse" and ch["runq_delay_p50_ms"] == "worse"
    assert ch["gil_waiters_mean"] == "worse"
    # per request: 600/19 against 100/120, far worse
    assert ch["ctx_switches_involuntary_per_s"] == "worse"


def test_near_miss_mixed_figures_excuse_only_the_freed_time():
    mixed = {**FAST, "p99_ms": 200.0}  # faster median, a far worse tail
    c = build_comparison(*_pair(), service=(SLOW, mixed))
    assert c["service"]["outcome"] == "mixed"
    ch = _changes(c)
    assert ch["busy_share_runnable"] == "moved"  # the partition holds whatever the outcome
    assert ch["runq_delay_p50_ms"] == "worse" and ch["gil_waiters_mean"] == "worse"
    assert render_compare_summary(c).startswith("Service: mixed (some figures better, some worse)")


def test_without_the_services_figures_only_the_freed_time_is_moved():
    c = build_comparison(*_pair())
    assert c["service"]["outcome"] is None and not c["service"]["rows"]
    assert "cannot tell an improvement from a regression" in c["service"]["text"]
    ch = _changes(c)
    assert ch["busy_share_runnable"] == "moved"  # a partition: a fact of accounting
    assert ch["runq_delay_p50_ms"] == "worse"  # no figures to say the service did more
    assert ch["ctx_switches_involuntary_per_s"] == "worse"  # no throughput to divide by


def test_near_miss_a_rise_beyond_the_freed_time_is_worse():
    before, after = _pair()
    before["metrics"]["busy_share_lock"] = 0.30  # 30 points freed
    # runnable rose 35 points: more than the lock gave back
    c = build_comparison(before, after)
    ch = _changes(c)
    assert ch["busy_share_runnable"] == "worse"
    assert ch["busy_share_gil"] == "moved"  # 10 points: within the 30 freed


def test_service_figures_within_the_noise_are_the_same():
    s = service_change(SLOW, {**SLOW, "qps": 21.0, "p50_ms": 48.0, "source": "x"})
    assert s["outcome"] == "same"
    assert {r["change"] for r in s["rows"]} == {"same"}
    errors = service_change(
        figures(source="a", requests=1000, failures=0, seconds=10.0),
        figures(source="b", requests=1000, failures=30, seconds=10.0),
    )
    rows = {r["name"]: r for r in errors["rows"]}
    assert rows["error_rate"]["change"] == "worse"  # 3 points of errors: beyond 1 point
    assert rows["qps"]["before"] == 100.0 and rows["qps"]["after"] == 97.0
    assert errors["outcome"] == "regressed"


def _report(primary: str, *findings: dict) -> dict:
    return {"verdict": {"primary": primary}, "findings": list(findings)}


def test_verdict_words():
    lock, compute = _finding("lock.contended", 0.8), _finding("compute.model_bound", 0.7)
    assert verdict_words(_report("lock", lock), _report("compute", compute)) == (
        "the lock contention is gone; now compute-bound"
    )
    weaker = {**lock, "score": 0.4}
    assert verdict_words(_report("lock", lock), _report("scheduling", weaker)) == (
        "the lock contention is no longer the main limit (score 0.80 → 0.40); "
        "now short of CPUs (threads queue for a core)"
    )
    assert verdict_words(_report("lock", lock), _report("lock", weaker)) == (
        "still lock-bound, less so (score 0.80 → 0.40)"
    )
    assert verdict_words(_report("lock", lock), _report("lock", lock)) == "still lock-bound"
    assert verdict_words(_report("unknown"), _report("lock", lock)) == (
        "was without a clear bottleneck; now lock-bound"
    )
    # an advisory finding of the category is not the verdict's
    advisory = _finding("lock.maybe", 0.9, advisory=True)
    assert verdict_words(_report("lock", advisory), _report("compute", compute)).startswith("was ")


HOSTILE = '<script>alert("x")</script>\x1b[31m|`*'


def test_every_output_shows_the_service_first_and_escapes_it():
    slow = {**SLOW, "source": f"locust figures from {HOSTILE}"}
    c = build_comparison(*_pair(), service=(slow, FAST))
    assert json.loads(json.dumps(c, allow_nan=False)) == c
    text = render_compare_summary(c)
    lines = text.splitlines()
    assert lines[0].startswith("Service: improved: throughput 19 req/s → 120 req/s (better)")
    assert "p50 52 ms → 8 ms (better)" in lines[0]
    assert lines[1] == "Verdict: the lock contention is gone; now compute-bound"
    assert "Moved (not worse): busy_share_runnable 5% → 40%" in text
    assert "\x1b" not in text
    md = render_compare_markdown(c)
    assert md.index("## The service") < md.index("## Verdict") < md.index("## What changed")
    assert "| p50 | 52 ms | 8 ms | 0.15x | **better** |" in md
    assert "**the lock contention is gone; now compute-bound.**" in md
    assert "<script>" not in md and "\x1b" not in md
    html = render_compare_html(c)
    body = html.split('<script type="application/json"', 1)[0]
    assert body.index('id="service"') < body.index('id="verdict"')
    assert 'class="service improved"' in body and "<script>alert" not in html
    assert "&lt;script&gt;alert" in body


def test_the_summary_says_how_to_give_the_figures_when_there_are_none():
    c = build_comparison(*_pair())
    first = render_compare_summary(c).splitlines()[0]
    assert first.startswith("Service: no throughput or latency figures for either capture")
    assert "--before-load/--after-load" in first
    one_side = build_comparison(*_pair(), service=(SLOW, None))
    assert "for the after capture" in one_side["service"]["text"]
    assert "--before-load" in render_compare_markdown(copy.deepcopy(one_side))
