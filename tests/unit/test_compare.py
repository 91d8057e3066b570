"""compare on hand-built metrics, findings and stacks: deltas, directions, trees, escaping."""

from __future__ import annotations

import json
import re

import pytest

from diagnose.analyse.registry import known_metrics
from diagnose.app.compare import (
    DIRECTIONS,
    build_comparison,
    diff_tree,
    finding_changes,
    hot_and_cold,
    metric_delta,
    metric_deltas,
    normalise_frame,
)
from diagnose.render.compare import (
    render_compare_html,
    render_compare_markdown,
    render_compare_summary,
)
from diagnose.render.model import stack_section


def test_every_direction_names_a_registered_metric():
    assert set(DIRECTIONS) <= set(known_metrics())
    assert set(DIRECTIONS.values()) <= {"lower", "higher"}


@pytest.mark.parametrize(
    ("name", "unit", "before", "after", "change"),
    [
        ("busy_share_lock", "share", 0.80, 0.20, "better"),
        ("busy_share_lock", "share", 0.20, 0.80, "worse"),
        ("busy_share_running", "share", 0.20, 0.60, "better"),  # higher is better
        ("busy_share_lock", "share", 0.50, 0.53, "same"),  # within 5 points
        ("lock_top_wait_s", "thread-s", 10.0, 9.0, "same"),  # within 15%
        ("lock_top_wait_s", "thread-s", 10.0, 2.0, "better"),
        ("gil_waiters_mean", "threads", 0.03, 0.0, "same"),  # -100%, but 0.03 threads
        ("rss_mb", "MiB", 100.0, 300.0, "changed"),  # no better direction
        ("busy_share_lock", "share", None, 0.5, "new"),
        ("busy_share_lock", "share", 0.5, None, "gone"),
        ("lock_top_address", "text", "0x55aa10", "0x55bb20", "same"),  # another process
        ("gil_holder_top", "text", "handler-2 (16032)", "handler-0 (16314)", "same"),
        ("oncpu_top_function", "text", "handle (a.py:3)", "predict (a.py:9)", "changed"),
    ],
)
def test_metric_delta_judges_beyond_the_noise(name, unit, before, after, change):
    assert metric_delta(name, unit, before, after)["change"] == change


def test_metric_delta_displays():
    row = metric_delta("busy_share_lock", "share", 0.81, 0.18)
    assert (row["display_before"], row["display_after"], row["display_delta"]) == (
        "81%",
        "18%",
        "-63 pts",
    )
    row = metric_delta("ctx_switches_involuntary_per_s", "1/s", 1570.0, 822.0)
    assert row["display_before"] == "1,570 1/s"
    assert row["display_delta"] == "-748 1/s (-48%)"


def test_metric_deltas_put_the_verdicts_evidence_first():
    before = {"busy_share_lock": 0.8, "migrations_per_s": 200.0, "idle_share": 0.1, "x": None}
    after = {"busy_share_lock": 0.6, "migrations_per_s": 20.0, "idle_share": 0.11, "x": None}
    rows = metric_deltas(before, after, focus=["busy_share_lock"])
    assert [r["name"] for r in rows] == ["busy_share_lock", "migrations_per_s", "idle_share"]
    assert rows[0]["focus"] and rows[0]["change"] == "better"
    assert rows[-1]["change"] == "same"


def _finding(rid: str, score: float) -> dict:
    return {"id": rid, "category": rid.split(".")[0], "kind": None, "title": rid.upper(),
            "score": score, "summary": "s", "advisory": False}  # fmt: skip


def test_finding_changes():
    ch = finding_changes(
        [_finding("lock.contended", 0.8), _finding("scheduling.migration", 0.3)],
        [_finding("lock.contended", 0.4), _finding("compute.model_bound", 0.5)],
    )
    assert [f["id"] for f in ch["appeared"]] == ["compute.model_bound"]
    assert [f["id"] for f in ch["disappeared"]] == ["scheduling.migration"]
    assert ch["stayed"][0]["id"] == "lock.contended"
    assert ch["stayed"][0]["score_delta"] == pytest.approx(-0.4)


def test_normalise_frame():
    assert normalise_frame("thread (4242): handler-7") == "thread: handler-N"
    assert normalise_frame("thread (4242): ") == "thread: (unnamed)"
    assert normalise_frame("handle (/srv/app.py:32)") == "handle (/srv/app.py)"
    assert normalise_frame("sgemm_kernel (libopenblas.so)") == "sgemm_kernel (libopenblas.so)"


def _tree_as_dict(cols: dict) -> dict[str, dict]:
    return {
        i: {k: cols[k][n] for k in ("labels", "parents", "before", "after", "size", "delta")}
        for n, i in enumerate(cols["ids"])
    }


def test_diff_tree_keeps_vanished_stacks_visible_and_parents_whole():
    before = {("t", "a", "x"): 3.0, ("t", "a", "y"): 1.0}
    after = {("t", "a", "y"): 2.0, ("t", "b"): 1.0}
    cols = diff_tree(before, after)
    nodes = _tree_as_dict(cols)
    by_label = {n["labels"]: n for n in nodes.values()}
    # x vanished: it keeps its before width and shows the full fall
    assert by_label["x"]["size"] == 3.0 and by_label["x"]["delta"] == -3.0
    assert by_label["y"]["size"] == 2.0 and by_label["y"]["delta"] == 1.0
    assert by_label["a"]["before"] == 4.0 and by_label["a"]["after"] == 2.0
    assert by_label["all"]["before"] == 4.0 and by_label["all"]["after"] == 3.0
    # plotly's branchvalues="total": no parent is smaller than its children together
    for i, n in nodes.items():
        kids = [m["size"] for m in nodes.values() if m["parents"] == i]
        assert n["size"] >= sum(kids) - 1e-9, n


def test_diff_tree_bounds_the_nodes_and_stays_a_tree():
    before = {("t", f"f{i}", f"g{j}"): 1.0 + i for i in range(40) for j in range(20)}
    cols = diff_tree(before, {}, max_nodes=50)
    assert len(cols["ids"]) == 51  # the root and the 50 biggest
    ids = set(cols["ids"])
    assert all(p in ids for p in cols["parents"][1:])


def test_hot_and_cold():
    before = {("a",): 5.0, ("b",): 1.0, ("c",): 1.0}
    after = {("a",): 1.0, ("b",): 3.0, ("c",): 1.0001}
    hc = hot_and_cold(before, after)
    assert [r["stack"] for r in hc["colder"]] == [["a"]]
    assert [r["stack"] for r in hc["hotter"]] == [["b"]]  # c moved by less than 1%


HOSTILE = '<script>alert("x")</script>\x1b[31m|`*'


def _report(lock: float, frames: list[str], **flames: list) -> dict:
    """What build_comparison reads: the report dict, its flame views' stacks included."""
    report = {
        "bundle": {"path": f"/b/{HOSTILE}", "complete": True},
        "target": {"pid": 7, "comm": HOSTILE, "cmdline": ["python", HOSTILE]},
        "capture": {"started": "2026-01-01T00:00:00", "duration_actual": 5.0,
                    "ended_by": "duration",
                    "run": {"argv": ["python", HOSTILE], "description": "exited with code 0"}},
        "verdict": {"primary": "lock", "kind": "mutex", "title": "Lock contention",
                    "confidence": 0.8, "headline": HOSTILE},
        "findings": [{**_finding("lock.contended", lock), "title": HOSTILE, "summary": HOSTILE,
                      "evidence": [{"metric": "busy_share_lock"}]}],
        "metrics": {"busy_share_lock": lock, "window_s": 5.0, "process_cpu_cores": 1.0,
                    "oncpu_top_function": HOSTILE if lock > 0.5 else "other"},
        "not_measured": [{"collector": "perf", "status": "unavailable", "reason": HOSTILE}],
    }  # fmt: skip
    views = {
        "wall": [((f"thread (1): {HOSTILE}", *frames), 5.0)],
        "cpu": [((f"thread (1): {HOSTILE}", *frames), 1.0)],
        **flames,
    }
    return {**report, "stacks": stack_section({k: v for k, v in views.items() if v is not None})}


@pytest.fixture
def hostile_comparison() -> dict:
    before = _report(0.8, ["main (a.py:1)", f"{HOSTILE} (b.py:2)"])
    after = _report(0.2, ["main (a.py:1)", "fixed (b.py:3)"])
    return build_comparison(before, after)


def test_comparison_is_json(hostile_comparison):
    c = hostile_comparison
    assert json.loads(json.dumps(c, allow_nan=False)) == c
    assert c["schema"] == "diagnose.compare/1"
    assert c["metrics"][0]["name"] == "busy_share_lock"
    assert c["flames"]["wall"]["colder"][0]["stack"][-1] == f"{HOSTILE} (b.py)"
    assert "waits" not in c["flames"]  # recorded in neither


def test_a_view_recorded_empty_after_is_compared_not_missing():
    # GIVEN threads waiting on a lock before, and none after the fix (the waits were
    # recorded, and there were none), while the on-CPU view was not recorded after
    waits = [(("lock wait", "thread (1): w", "main (a.py:1)"), 4.0)]
    before = _report(0.8, ["main (a.py:1)"], waits=waits)
    after = _report(0.0, ["main (a.py:1)"], waits=[], cpu=None)
    c = build_comparison(before, after)
    # THEN the waits are drawn, all colder; the on-CPU view says what was not recorded
    waits = c["flames"]["waits"]
    assert waits["missing"] is None
    assert waits["colder"][0]["stack"][0] == "lock wait" and not waits["hotter"]
    assert c["flames"]["cpu"]["missing"] == "after"
    assert 'id="flame-waits"' in render_compare_html(c)


def test_html_escapes_what_the_target_controls(hostile_comparison):
    html = render_compare_html(hostile_comparison)
    body = html.split('<script type="application/json"', 1)[0]
    assert "<script>alert" not in html
    assert "\x1b" not in body
    assert "&lt;script&gt;alert" in body
    data = re.search(
        r'<script type="application/json" id="compare-data">(.*?)</script>', html, re.S
    )
    assert data is not None and "<" not in data.group(1)  # tojson escapes < > &
    assert json.loads(data.group(1))["verdict"]["after"]["headline"] == HOSTILE


def test_markdown_escapes_what_the_target_controls(hostile_comparison):
    md = render_compare_markdown(hostile_comparison)
    assert "\x1b" not in md
    outside_code = re.sub(r"`[^`]*`", "", md)  # markup is inert inside code spans
    assert "<script>" not in outside_code
    assert "\\<script\\>" in md  # as text, escaped
    # no table row is split by a | from the target: each has as many cells as its header
    cells = 0
    for line in md.splitlines():
        if not line.startswith("|"):
            cells = 0
            continue
        n = len(re.findall(r"(?<!\\)\|", line))
        cells = cells or n
        assert n == cells, line


def test_terminal_summary_is_plain(hostile_comparison):
    text = render_compare_summary(hostile_comparison, "out/compare.html")
    assert "\x1b" not in text
    assert text.splitlines()[0].startswith("Service: no throughput or latency figures")
    assert "(Lock contention (mutex), confidence 80%" in text.splitlines()[2]
    assert "Better: busy_share_lock 80% → 20%" in text
    assert text.endswith("Comparison: out/compare.html")


def test_caveats_name_what_differs_besides_the_change():
    before, after = _report(0.8, ["a"]), _report(0.2, ["a"])
    assert build_comparison(before, after)["caveats"] == []
    before["metrics"].update(host_other_cpu_share=0.05, cores_available=2)
    after["metrics"].update(host_other_cpu_share=0.6, cores_available=4, window_s=1.0)
    after["capture"]["ended_by"] = "target_exited"
    after["not_measured"] = []  # perf ran after, not before
    text = "\n".join(build_comparison(before, after)["caveats"])
    assert "5% of the usable CPUs busy before and 60% after" in text
    assert "cores available differ: 2 before, 4 after" in text
    assert "differ in length (5.0 s and 1.0 s)" in text
    assert "the after capture is partial (target_exited)" in text
    assert "collector perf was unavailable only before" in text


def test_a_caveat_never_shows_an_empty_value():
    # GIVEN a Python target before, and after one whose Python version is not known
    before, after = _report(0.8, ["a"]), _report(0.2, ["a"])
    before["metrics"]["python_version"] = "3.11"
    after["metrics"]["python_version"] = ""
    caveats = build_comparison(before, after)["caveats"]
    # THEN the caveat says what is not known, instead of an empty value
    assert caveats == ["Python versions differ: 3.11 before, unknown after"]
    after["metrics"]["python_version"] = "3.12"
    caveats = build_comparison(before, after)["caveats"]
    assert caveats == ["Python versions differ: 3.11 before, 3.12 after"]
    before["metrics"]["python_version"] = ""
    after["metrics"]["python_version"] = None
    assert build_comparison(before, after)["caveats"] == []


def test_parents_always_cover_their_children_after_rounding():
    # GIVEN stacks whose values round so that children would sum past their parent
    from diagnose.app.compare import diff_tree

    before = {("a", f"b{i}"): 0.33334 for i in range(3)}
    after = {("a", f"b{i}"): 0.33336 for i in range(3)}
    t = diff_tree(before, after)
    # THEN plotly's 'total' branch values hold for every node
    size = dict(zip(t["ids"], t["size"], strict=True))
    kids: dict[str, float] = {}
    for node, parent in zip(t["ids"], t["parents"], strict=True):
        if parent:
            kids[parent] = kids.get(parent, 0.0) + size[node]
    assert all(total <= size[p] for p, total in kids.items()), (kids, size)


# --- issue 41, item 3: a pre-fork service compared as a service ----------------------------


def test_a_lock_removed_from_a_worker_that_was_not_the_busiest_is_gone():
    from diagnose.app.compare import finding_changes, service_findings

    lock = {"id": "lock.contended", "category": "lock", "kind": "mutex", "title": "Lock",
            "score": 0.7, "summary": "7 waiters", "evidence": [{"metric": "lock_top_site", "display": "predict (app.py:43)"}]}  # fmt: skip
    spin = {"id": "scheduling.pool_spin", "category": "scheduling", "kind": "oversubscription",
            "title": "Pool spin", "score": 0.6, "summary": "", "evidence": []}  # fmt: skip
    # GIVEN before: the busiest worker found the pool spin, another worker the lock
    before = {
        "findings": [spin],
        "service": {"findings": [{**lock, "site": "predict (app.py:43)", "workers": [{"pid": 2}]}]},
    }
    after = {"findings": [spin], "service": {"findings": []}}
    # THEN the lock is gone, named with its site; the spin stayed
    c = finding_changes(service_findings(before), service_findings(after))
    assert [(f["id"], f["site"]) for f in c["disappeared"]] == [
        ("lock.contended", "predict (app.py:43)")
    ]
    assert [f["id"] for f in c["stayed"]] == ["scheduling.pool_spin"]


def test_a_lock_at_another_line_is_another_lock():
    from diagnose.app.compare import finding_changes

    def lock(site: str) -> dict:
        return {"id": "lock.contended", "category": "lock", "title": "Lock", "score": 0.7,
                "summary": "", "evidence": [{"metric": "lock_top_site", "display": site}]}  # fmt: skip

    c = finding_changes([lock("a (app.py:1)")], [lock("b (app.py:9)")])
    assert [f["site"] for f in c["disappeared"]] == ["a (app.py:1)"]
    assert [f["site"] for f in c["appeared"]] == ["b (app.py:9)"]
