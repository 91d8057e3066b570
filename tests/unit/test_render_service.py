"""A service of several workers in every report: its verdict first, a row per worker, the
busiest worker's findings below (render/terminal.py, report.md.j2, html/_service.html.j2)."""

from __future__ import annotations

import copy

import pytest

from diagnose.app.compare import verdict_change
from diagnose.app.report import Diagnosis, diagnose
from diagnose.app.service import service_section
from diagnose.render.charts import chart_data
from diagnose.render.html import render_html
from diagnose.render.markdown import render_markdown
from diagnose.render.terminal import render_summary
from diagnose.verdict.service import lead_verdict
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def lock() -> Diagnosis:
    return diagnose(FIXTURES / "bundles" / "lock_contention")


def with_workers(d: Diagnosis, other_primary: str, other_cores: float) -> dict:
    """d's report as the busiest of three workers: a second one judged (its verdict made
    ``other_primary``, its CPU ``other_cores``), a third whose capture failed."""
    other = copy.copy(d)
    other.report = copy.deepcopy(d.report)
    other.report["verdict"]["primary"] = other_primary
    other.report["verdict"]["title"] = other_primary.title()
    other.report["verdict"]["kind"] = "mutex" if other_primary == "lock" else None
    other.report["metrics"]["process_cpu_cores"] = other_cores
    report = copy.deepcopy(d.report)
    report["service"] = service_section(
        d.report,
        [
            ({"pid": 902, "status": "ok"}, other.report, ""),
            ({"pid": 903, "status": "failed"}, None, "its capture failed: exit code 4"),
        ],
    )
    return report


def test_the_terminal_puts_the_services_verdict_first_then_each_worker(lock):
    report = with_workers(lock, "lock", 0.2)
    pid = report["target"]["pid"]
    lines = render_summary(report, width=100).splitlines()
    sv = report["service"]["verdict"]
    assert lines[0] == f"Verdict: Lock contention (mutex), confidence {sv['confidence'] * 100:.0f}%, for the service's 3 workers"  # fmt: skip
    assert any(
        ln.startswith(f"  PID {pid}: lock/mutex ") and ln.endswith("(below)") for ln in lines
    )
    assert any(ln.startswith("  PID 902: lock/mutex ") and ln.endswith("(workers/902/)") for ln in lines)  # fmt: skip
    assert "  PID 903: not judged: its capture failed: exit code 4" in lines
    assert "  the busiest worker's: Lock contention (mutex)" in lines


def test_workers_that_disagree_are_said_to_in_every_report(lock):
    # GIVEN a second worker that says compute, busier than the lock-bound one
    report = with_workers(lock, "compute", 50.0)
    sv = report["service"]["verdict"]
    assert sv["primary"] == "compute" and not sv["agree"]
    # THEN the terminal leads with compute, and still shows the busiest worker's verdict
    lines = render_summary(report, width=100).splitlines()
    assert (
        lines[0].startswith("Verdict: Model compute, confidence ")
        and "for the service's 3 workers" in lines[0]
    )
    assert "  the busiest worker's: Lock contention (mutex)" in lines
    md = render_markdown(report)
    assert (
        "**Service of 3 workers:** Model compute, confidence" in md and "The workers disagree" in md
    )
    assert "| PID 902 | Compute | " in md and "| workers/902/report.md |" in md
    assert "| PID 903 | not judged: its capture failed: exit code 4 |" in md
    # and the load is uneven (the compute worker did nearly all the CPU), said everywhere
    assert sv["uneven"] and "unevenly loaded: PID 902" in "\n".join(lines)
    assert "**Load:** unevenly loaded: PID 902" in md
    html = render_html(report, chart_data(report))
    assert 'id="uneven"' in html
    assert 'id="service"' in html and "<strong>The workers disagree</strong>" in html
    assert '<a href="workers/902/report.html">' in html and 'href="workers/903/' not in html


def test_one_process_has_no_service_section(lock):
    assert lock.report["service"] == {}
    assert "Service of" not in render_markdown(lock.report)
    assert 'id="service"' not in render_html(lock.report, chart_data(lock.report))
    assert "for the service's" not in render_summary(lock.report, width=100)


def test_compare_and_sweep_lead_with_the_services_verdict(lock):
    # GIVEN a service whose workers say compute (its busiest worker: lock), and one process
    before, after = with_workers(lock, "compute", 50.0), copy.deepcopy(lock.report)
    # WHEN they are compared
    change = verdict_change(before, after)
    # THEN the service's verdict is the one compared, its summary the headline
    assert change["before"]["primary"] == "compute" and change["after"]["primary"] == "lock"
    assert change["changed"] and change["text"].startswith("Model compute, confidence ")
    assert change["before"]["headline"].startswith("the service's 3 workers: compute in 1 of 2")
    assert lead_verdict(after) == after["verdict"]  # near miss: one process, as it was


def _costed(d: Diagnosis, start_up: float, parts: list[float]) -> dict:
    """d's report with its capture's CPU set: ``start_up`` cores in all (its start-up
    counted), ``parts`` what it used while its window was open."""
    report = copy.deepcopy(d.report)
    report["capture"]["tool_cpu_cores"] = start_up
    report["capture"]["tool_cpu_parts"] = [
        {"part": f"part {i}", "cpu_s": c * 10, "cores": c} for i, c in enumerate(parts)
    ]
    return report


def test_the_services_tool_cpu_is_said_with_and_without_the_start_ups(lock):
    # GIVEN two captures (measured on uvicorn_workers2_textclean, 2026-12-03 12:55: 0.041 and
    # 0.034 cores with their start-ups, 0.023 and 0.018 while their windows were open)
    main, other = _costed(lock, 0.041, [0.009, 0.005, 0.009]), _costed(lock, 0.034, [0.018])
    s = service_section(main, [({"pid": 902, "status": "ok"}, other, "")])
    # THEN the service's figures are both sums, each worker's window figure in its row
    assert s["tool_cpu_cores"] == pytest.approx(0.075)
    assert s["tool_cpu_window_cores"] == pytest.approx(0.041)
    assert [w["tool_window_cores"] for w in s["workers"]] == [0.023, 0.018]
    report = copy.deepcopy(main)
    report["service"] = s
    said = "diagnose used 0.07 cores for the 2 captures, 0.04 while their windows were open"
    assert f"  {said}" in render_summary(report, width=100).splitlines()
    assert f"{said}." in render_markdown(report)
    assert f"{said}." in render_html(report, chart_data(report))
    # near miss: a capture without the parts (a bundle recorded before they were measured):
    # no sum of the windows, which would pass a part for the whole
    older = copy.deepcopy(other)
    older["capture"]["tool_cpu_parts"] = []
    s = service_section(main, [({"pid": 902, "status": "ok"}, older, "")])
    assert s["tool_cpu_cores"] == pytest.approx(0.075) and s["tool_cpu_window_cores"] is None
    report["service"] = s
    assert "while their windows were open" not in render_summary(report, width=100)
    assert "while their windows were open" not in render_markdown(report)


# --- issue 41, item 1: what every worker found, on the first screen --------------------------


def _worker_found(d: Diagnosis, findings: list[dict]) -> dict:
    """d's report as the busiest of two workers whose other worker found ``findings``."""
    other = copy.deepcopy(d.report)
    other["findings"] = findings
    report = copy.deepcopy(d.report)
    report["findings"] = [f for f in report["findings"] if f["category"] != "lock"]
    report["service"] = service_section(report, [({"pid": 902, "status": "ok"}, other, "")])
    return report


def _lock_finding(score: float, site: str) -> dict:
    return {
        "id": "lock.mutex", "category": "lock", "kind": "mutex", "title": "Threads queue on a lock",
        "score": score, "summary": "7 waiters", "fixes": ["Narrow the lock <b>"],
        "evidence": [{"metric": "lock_top_site", "display": site}],
    }  # fmt: skip


def test_a_lock_found_in_another_worker_is_on_the_first_screen_with_its_site(lock):
    report = _worker_found(lock, [_lock_finding(0.7, "predict (app.py:43)")])
    found = report["service"]["findings"]
    assert [
        (f["id"], f["site"], [w["pid"] for w in f["workers"]])
        for f in found
        if f["category"] == "lock"
    ] == [("lock.mutex", "predict (app.py:43)", [902])]
    # the terminal, among the service's lines before the busiest worker's findings
    text = render_summary(report, width=100)
    head = text.split("the busiest worker's")[0]
    assert (
        "Threads queue on a lock [lock/mutex, score 0.70] at predict (app.py:43), in PID 902"
        in " ".join(head.split())
    )
    # HTML: at the top, linking the worker's page; Markdown: in the service's paragraph
    html = render_html(report, chart_data(report))
    assert html.index('id="service-findings"') < html.index('id="findings"')
    assert (
        'href="workers/902/report.html">PID 902</a>' in html and "Narrow the lock &lt;b&gt;" in html
    )
    md = render_markdown(report)
    assert "in PID 902: Narrow the lock" in md and md.index("Found in the workers") < md.index(
        "**Verdict:**"
    )


def test_the_same_rule_and_site_in_two_workers_is_one_line_naming_both(lock):
    main_finding = _lock_finding(0.6, "predict (app.py:43)")
    report = copy.deepcopy(lock.report)
    report["findings"] = [main_finding]
    other = copy.deepcopy(lock.report)
    other["findings"] = [
        _lock_finding(0.8, "predict (app.py:43)"),
        _lock_finding(0.9, "load (app.py:9)"),
    ]
    found = service_section(report, [({"pid": 902, "status": "ok"}, other, "")])["findings"]
    locks = [
        (f["site"], f["score"], sorted(w["pid"] for w in f["workers"]))
        for f in found
        if f["category"] == "lock"
    ]
    pid = report["target"]["pid"]
    assert locks == [
        ("load (app.py:9)", 0.9, [902]),
        ("predict (app.py:43)", 0.8, sorted([pid, 902])),
    ]


def test_near_miss_findings_below_half_and_advisories_stay_in_the_workers_pages(lock):
    lead = {**_lock_finding(0.3, "lead (a.py:2)"), "id": "lock.lead"}  # the worker's verdict
    weak = _lock_finding(0.14, "predict (app.py:43)")  # below half the lead and below 0.5
    advisory = {**_lock_finding(0.9, "x (a.py:1)"), "advisory": True}
    report = _worker_found(lock, [advisory, lead, weak])
    shown = [(f["id"], f["site"]) for f in report["service"]["findings"] if f["category"] == "lock"]
    assert shown == [("lock.lead", "lead (a.py:2)")]


def _finding(fid: str, category: str, score: float) -> dict:
    return {"id": fid, "category": category, "kind": fid.split(".")[-1], "title": fid,
            "score": score, "fixes": [], "evidence": []}  # fmt: skip


def test_a_lock_close_to_a_neighbours_contention_stays_on_the_service_screen(lock):
    # a CPU-heavy neighbour lowers every score of a lock-bound worker and puts contention
    # first: the lock its threads queue on still holds most of their busy time
    findings = [
        _finding("scheduling.cpu_contention", "scheduling", 0.35),
        _lock_finding(0.26, "predict (app.py:43)"),
        _finding("compute.kernels", "compute", 0.19),
        # a fourth and fifth, close to the lead but not on the worker's first screen
        _finding("memory.bandwidth", "memory", 0.18),
        _finding("io.wait", "io", 0.176),
    ]
    report = _worker_found(lock, findings)
    theirs = [
        (f["id"], f["score"])
        for f in report["service"]["findings"]
        if 902 in [w["pid"] for w in f["workers"]]
    ]
    assert theirs == [
        ("scheduling.cpu_contention", 0.35),
        ("lock.mutex", 0.26),
        ("compute.kernels", 0.19),
    ]
    assert "at predict (app.py:43), in PID 902" in " ".join(
        render_summary(report, width=100).split()
    )
