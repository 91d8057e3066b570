"""The sweep report built from a hand-built record, step reports and a comparison, and its
renderings: Markdown (well-formed, hostile strings inert), HTML (escaped, charts' data
embedded safely), the terminal lines."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt

from diagnose.render.sweep import (
    render_sweep_html,
    render_sweep_markdown,
    render_sweep_summary,
    step_line,
)
from diagnose.sweep.model import build_sweep_report

HOSTILE = "<script>alert(1)</script>|`*[x](http://evil)*`\x1b[31m"


def load(users, qps, p99, failures=0, seconds=4.0, mean=None):
    requests = round(qps * seconds) + failures
    return {
        "tool": "locust",
        "seconds": seconds,
        "requests": requests,
        "failures": failures,
        "p50_ms": p99 / 2,
        "p95_ms": p99 * 0.9,
        "p99_ms": p99,
        "mean_ms": mean if mean is not None else users / qps * 1000 if qps else None,
        "max_ms": p99 * 1.2,
        "errors": [{"error": HOSTILE, "count": failures}] if failures else [],
        "extra": {},
    }


def gen(demand=0.2, cores=0.1, host=0.5):
    return {
        "measured": True,
        "cpu_cores": cores,
        "busiest_thread_oncpu": demand / 2,
        "busiest_thread_waiting": demand / 2,
        "busiest_thread_demand": demand,
        "saturated": demand >= 0.9,
        "host_busy_share": host,
    }


def step(slug, users, qps, p99, status="ok", **kw):
    return {
        "users": users,
        "status": status,
        "reason": kw.pop("reason", ""),
        "dir": f"steps/{slug}/users-{users}",
        "bundle": f"steps/{slug}/users-{users}/bundle",
        "load_dir": f"steps/{slug}/users-{users}/load",
        "load": None if qps is None else load(users, qps, p99, **kw.pop("load", {})),
        "generator": kw.pop("generator", gen()),
        "capture": {"ended_by": "duration", "partial": False},
        "window": {"capture_lead_s": 1.0, "capture_covers": kw.pop("covers", 1.0)},
    }


def record(settings, state="complete", sla=None, peak=None, vary=None):
    return {
        "schema": "diagnose.sweep",
        "schema_version": 1,
        "state": state,
        "end_reason": None,
        "started": "2026-01-01T00:00:00+00:00",
        "ended": "2026-01-01T00:01:00+00:00",
        "target": {"run": ["python", "serve.py"]},
        "load": {"kind": "locust", "tool": "locust", "command": ["lf.py"], "host": "http://h:1"},
        "steps_requested": [1, 2, 4, 8],
        "step_duration_s": 4.0,
        "warmup_s": 2.0,
        "sla_p99_ms": sla,
        "peak_qps": peak,
        "vary": vary,
        "capture": {"collectors": None},
        "host": {"logical_cpus": 2},
        "settings": settings,
    }


def setting(name, slug, steps, **kw):
    return {"name": name, "slug": slug, "var": None, "value": None, "steps": steps, **kw}


def verdict(primary, kind, title, conf=0.8):
    return {
        "verdict": {
            "primary": primary,
            "kind": kind,
            "title": title,
            "confidence": conf,
            "headline": f"{title}: {HOSTILE}",
        },
        "findings": [
            {"id": f"{primary}.x", "title": title, "summary": HOSTILE, "fixes": ["fix it"]}
        ],
        "metrics": {"busy_share_lock": 0.7 if primary == "lock" else 0.0, "busy_share_io": 0.2},
    }


POOL = [(1, 10, 110), (2, 20, 110), (4, 38, 115), (8, 39, 320), (16, 38.5, 700)]
COMPARE = {
    "verdict": {
        "text": "Waiting on I/O (dependency), confidence 97% → Lock contention (mutex), confidence 60%",
        "changed": True,
    },
    "metrics": [
        {
            "name": "oncpu_share_allocator",
            "display_before": "0%",
            "display_after": "100%",
            "change": "worse",
        },
        {
            "name": "busy_share_lock",
            "display_before": "0%",
            "display_after": "46%",
            "change": "worse",
        },
        {
            "name": "process_cpu_cores",
            "display_before": "0.1",
            "display_after": "0.1",
            "change": "same",
        },
    ],
    "findings": {"appeared": [{"title": "Threads queue on one lock"}], "disappeared": []},
    "caveats": [],
}


def pool_report(**kw):
    steps = [step("default", u, q, p) for u, q, p in POOL]
    reports = {("default", u): verdict("io", "dependency", "Waiting on I/O") for u, _, _ in POOL}
    reports[("default", 16)] = verdict("lock", "mutex", "Lock contention")
    rec = record([setting("default", "default", steps)], **kw)
    return build_sweep_report(rec, reports, {"default": COMPARE}, "/tmp/sweep")


def test_model_knee_verdicts_and_compare():
    m = pool_report(sla=200, peak=100)
    (s,) = m["settings"]
    assert m["schema"] == "diagnose.sweep-report/1" and m["chosen"] == 0 and m["best"] is None
    assert s["knee"]["status"] == "found" and s["knee"]["users"] == 4
    assert s["knee"]["verdict_at"]["label"] == "Waiting on I/O (dependency)"
    assert s["knee"]["verdict_after"]["label"] == "Waiting on I/O (dependency)"
    assert s["knee"]["verdict_last"]["label"] == "Lock contention (mutex)"
    assert s["knee"]["last_users"] == 16
    assert s["knee"]["text"].endswith(
        "past it (8 users): Waiting on I/O (dependency); at 16 users: Lock contention (mutex)"
    )
    assert [r["band"] for r in s["steps"]] == ["below", "below", "knee", "past", "past"]
    assert s["steps"][2]["links"]["html"] == "steps/default/users-4/bundle/report.html"
    assert s["steps"][0]["in_flight"] == pytest.approx(1.0)
    a = s["across_knee"]
    assert a["verdict_changed"] and a["link"] == "knee/default/compare.html"
    # judged changes only, the busy shares first
    assert [x["name"] for x in a["metrics"]] == ["busy_share_lock", "oncpu_share_allocator"]
    rec = m["capacity"]
    assert rec["basis"] == "sla" and rec["users"] == 4 and rec["safe_qps"] == pytest.approx(26.6)
    assert rec["replicas"] == 5  # ceil(100 / 26.6) = 4, plus one
    assert "The knee is at 4 users" in m["headline"] and "Serve at 4 concurrent" in m["headline"]
    json.dumps(m, allow_nan=False)  # JSON-ready


def test_model_caveats():
    steps = [
        step("d", 1, 10, 100, covers=0.62),
        step("d", 2, 20, 100, load={"mean": 30.0}),  # 20/s x 30 ms = 0.6 in flight of 2
        step("d", 4, 30, 150, load={"failures": 20}),
        step("d", 8, None, 0, status="failed", reason="locust exited with code 1: boom"),
        step("d", 16, 31, 600, generator=gen(demand=0.97, cores=0.9, host=0.99)),
    ]
    m = build_sweep_report(
        record([setting("d", "d", steps, stopped_early="service died")], state="interrupted"), {}
    )
    (s,) = m["settings"]
    text = "\n".join(s["caveats"])
    assert [r["band"] for r in s["steps"]] == ["below", "below", "errors", "failed", "saturated"]
    assert "saturated at 16 users" in text and "97%" in text
    assert "step at 8 users failed: locust exited with code 1: boom" in text
    assert "of the requests failed" in text
    assert "fewer requests were in flight than users at 2 users (0.6)" in text
    assert "generator itself used 0.90 of its 2 cores" in text
    assert "stopped early: service died" in text
    assert "the capture covered only 62% at 1 user of the load window" in text
    assert m["caveats"] and "did not finish (interrupted)" in m["caveats"][0]


# the observed sweep (tests/unit/test_sweep_analysis.py's OBSERVED): the generator used 0.15
# cores, yet the old caveat told the user to check it
OBSERVED = [(1, 140.2, 21), (2, 256.8, 76), (4, 275.1, 39), (8, 279.4, 160)]


def observed_report(generator):
    # 10 s windows: whole requests at these rates, so the QPS shown is the QPS given
    steps = [
        step("d", u, q, p, generator=generator, load={"seconds": 10.0}) for u, q, p in OBSERVED
    ]
    return build_sweep_report(record([setting("d", "d", steps)], sla=100), {})


def test_observed_sweep_advice_agrees_with_its_table():
    m = observed_report(gen(demand=0.2, cores=0.15, host=0.6))
    (s,) = m["settings"]
    # THEN the setting served at is the most QPS within P99 <= 100 ms, and P99's fall is a fall
    assert m["capacity"]["users"] == 4
    assert (
        "Serve at 4 concurrent requests (the most QPS with P99 <= 100 ms): 275.1 QPS"
        in (m["headline"])
    )
    assert "P99 fell to x0.5 at 4 users" in m["headline"]
    # and the caveat clears the generator with its measured CPU instead of blaming it
    (flat,) = [c for c in s["caveats"] if c.startswith("QPS stopped growing")]
    assert flat.startswith(
        "QPS stopped growing past 2 users but P99 fell to x0.51 at 4 users instead of rising"
    )
    assert "not the load generator: at 4 users it used 0.15 cores" in flat
    assert "20% of the window (below the 90% that marks it saturated)" in flat
    assert "4.0 requests were in flight at 4 users" in flat
    assert "check the load generator" not in flat


def test_the_generator_is_blamed_when_its_cpu_says_so():
    # GIVEN a full host on which the generator held 0.6 of the 2 cores (>= a quarter)
    m = observed_report(gen(demand=0.7, cores=0.6, host=0.99))
    (flat,) = [c for c in m["settings"][0]["caveats"] if c.startswith("QPS stopped growing")]
    assert "the load generator's CPU says it was the limit (at 2 users it used 0.60 cores" in flat


def test_an_unmeasured_generator_is_neither_blamed_nor_cleared():
    m = observed_report({"measured": False, "saturated": False})
    (flat,) = [c for c in m["settings"][0]["caveats"] if c.startswith("QPS stopped growing")]
    assert "the load generator's CPU was not measured" in flat


def test_steps_without_a_report_still_render():
    # a step whose capture or report failed has no links: the sweep's reports still render
    # (the Markdown template once read the missing link as an error and wrote no report)
    steps = [step("d", 1, 10, 100), step("d", 2, None, 0, status="failed", reason="boom")]
    m = build_sweep_report(record([setting("d", "d", steps)]), {})
    assert [r["links"] for r in m["settings"][0]["steps"]] == [{}, {}]
    md, html = render_sweep_markdown(m), render_sweep_html(m)
    assert "| 2 |" in md and "(failed)" in md and "[md](" not in md
    assert 'class="step-link"' not in html


def test_model_best_setting_of_a_vary():
    bad = [step("x4", u, q, p) for u, q, p in [(1, 22, 320), (2, 18, 290), (4, 16, 2200)]]
    good = [step("x1", u, q, p) for u, q, p in [(1, 60, 24), (2, 100, 75), (4, 104, 150)]]
    rec = record(
        [setting("X=4", "X=4", bad), setting("X=1", "X=1", good)],
        vary={"name": "X", "values": ["4", "1"]},
        peak=1000,
    )
    m = build_sweep_report(rec, {})
    assert m["best"]["best"] == 1 and m["best"]["beats_baseline"] is True and m["chosen"] == 1
    assert m["settings"][0]["baseline"] and not m["settings"][1]["baseline"]
    assert m["capacity"]["users"] == 2 and m["capacity"]["replicas"] == 16  # 1000 / 70 -> 15, +1
    assert m["headline"].startswith("X=1 is best")


def test_markdown_is_well_formed_and_inert():
    text = render_sweep_markdown(pool_report(sla=200, peak=100))
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)
    assert not [t for t in tokens if t.type.startswith("html")]
    assert "<script>" not in text and "\x1b" not in text
    assert "| 4 | 38.0 |" in text and "**Knee:**" in text
    assert "[md](steps/default/users-4/bundle/report.md)" in text
    # every table row has as many cells as its header
    for table in re.findall(r"((?:^\|.*\|\n)+)", text, re.M):
        rows = table.strip().splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", r)) for r in rows}
        assert len(widths) == 1, table


def test_html_escapes_and_embeds_data_safely():
    html = render_sweep_html(pool_report(sla=200))
    assert "<script>alert(1)" not in html
    data = re.search(r'<script type="application/json" id="sweep-data">(.*?)</script>', html, re.S)
    assert data and "</script" not in data.group(1).lower()
    m = json.loads(data.group(1))
    assert m["settings"][0]["knee"]["users"] == 4
    assert 'id="chart-qps"' in html and 'id="chart-latency"' in html
    assert 'href="steps/default/users-16/bundle/report.html"' in html
    assert 'href="knee/default/compare.html"' in html
    assert "Content-Security-Policy" in html


def test_terminal_lines_are_plain():
    m = pool_report()
    summary = render_sweep_summary(m, "/tmp/sweep/report.html")
    assert "\x1b" not in summary
    assert summary.splitlines()[0].startswith("Knee: the knee is at 4 users")
    assert "Across the knee: Waiting on I/O" in summary and "busy_share_lock 0% → 46%" in summary
    s = step("default", 4, 38, 115)
    line = step_line(s, verdict("io", "dependency", "Waiting on I/O"), "X=\x1b[31m1")
    assert "\x1b" not in line and "38.0" in line and "Waiting on I/O (dependency) 80%" in line
    failed = step("d", 8, None, 0, status="failed", reason="boom\nsecond line")
    assert step_line(failed, None).endswith("FAILED: boom second line")


def test_docs_name_every_field_of_the_report():
    """docs/sweep.md documents report.json: every key the model writes is named there."""
    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "sweep.md").read_text()
    m = pool_report(sla=200, peak=100)
    s = m["settings"][0]
    groups = [m, m["sweep"], s, s["steps"][0], s["knee"], s["recommendation"], s["across_knee"]]
    missing = sorted({k for g in groups for k in g if f"`{k}`" not in doc})
    assert not missing, f"add these report.json fields to docs/sweep.md: {missing}"


def test_compare_finds_a_sweep_steps_own_figures(tmp_path):
    from diagnose.app.sweep import step_figures

    steps = [step("base", 1, 40.0, 30.0), step("base", 2, 70.0, 40.0), step("base", 4, None, 0)]
    (tmp_path / "sweep.json").write_text(json.dumps(record([setting("base", "base", steps)])))
    for s in steps:
        (tmp_path / s["bundle"]).mkdir(parents=True)
    f = step_figures(tmp_path / steps[1]["bundle"])
    assert f is not None and f["qps"] == 70.0 and f["p99_ms"] == 40.0
    assert f["source"] == f"sweep step, 2 users ({tmp_path / 'sweep.json'})"
    assert step_figures(tmp_path / steps[2]["bundle"]) is None  # the step has no figures
    assert step_figures(tmp_path / "steps") is None  # not a step's bundle
    other = tmp_path.parent / f"{tmp_path.name}-elsewhere" / "b"
    other.mkdir(parents=True)
    assert step_figures(other) is None
