"""The plotly figures of the HTML report, built from hand-made analysis series."""

from __future__ import annotations

import json

import pytest

from diagnose.render.charts import (
    STATE_COLORS,
    chart_data,
    cpus_figure,
    runq_figure,
    switches_figure,
    timeline_figure,
)
from diagnose.render.model import stack_section

STATES = list(STATE_COLORS)


def _report(
    metrics: dict, unmeasured: dict, flames: dict | None = None, series: dict | None = None
) -> dict:
    """The parts of a report dict the charts read."""
    return {
        "metrics": metrics,
        "unmeasured": unmeasured,
        "stacks": stack_section(flames or {}),
        "series": series or {},
    }


def timeline(threads: list[str], z: list[list[int]]) -> dict:
    return {
        "states": STATES,
        "t": [0.05 * i for i in range(len(z[0]))],
        "threads": threads,
        "tids": list(range(len(threads))),
        "z": z,
        "omitted_threads": 0,
    }


def test_timeline_colours_each_state_and_leaves_unseen_bins_empty():
    # GIVEN two threads; the second was not seen in the first bin
    fig = timeline_figure(timeline(["a (1)", "b (2)"], [[0, 3, 3], [-1, 1, 5]]))
    hm = fig["data"][0]
    assert hm["type"] == "heatmap"
    assert hm["z"] == [[0, 3, 3], [None, 1, 5]]
    assert hm["text"][1] == ["", "runnable (waiting for a core)", "idle"]
    # THEN code i falls in the colour band of state i (plotly maps z to zmin..zmax -> 0..1)
    scale = hm["colorscale"]
    bands = [(scale[j][0], scale[j + 1][0], scale[j][1]) for j in range(0, len(scale), 2)]
    for code, state in enumerate(STATES):
        at = (code - hm["zmin"]) / (hm["zmax"] - hm["zmin"])
        colours = [c for lo, hi, c in bands if lo < at < hi]
        assert colours == [STATE_COLORS[state]]


def test_timeline_row_labels_are_plotly_safe_and_distinct():
    long = "L" * 500
    fig = timeline_figure(
        timeline(["<b>x</b> & co (7)", f"{long} (8)", f"{long} (9)"], [[0], [0], [0]])
    )
    rows = fig["data"][0]["y"]
    assert rows[0] == "&lt;b&gt;x&lt;/b&gt; &amp; co (7)"
    assert rows[1] != rows[2] and rows[1].endswith("(8)") and len(rows[1]) <= 60


def test_run_queue_histogram_in_percent_of_timeslices():
    fig = runq_figure({"edges_ms": [0, 0.1, 1, 10], "counts": [1, 3, 0], "source": "schedstat"})
    bar = fig["data"][0]
    assert bar["x"] == ["< 0.1", "0.1–1", "1–10"]
    assert bar["y"] == [25.0, 75.0, 0.0]
    assert runq_figure({"edges_ms": [0, 1], "counts": [0], "source": "schedstat"}) is None


def test_switches_per_second_has_one_line_per_counter():
    fig = switches_figure({"t": [0, 1], "vcsw": [10, 12], "ivcsw": [3, 4], "migrations": [0, 1]})
    assert [tr["y"] for tr in fig["data"]] == [[10, 12], [3, 4], [0, 1]]
    assert switches_figure({}) is None


def test_cpus_are_lines_for_a_few_and_a_heatmap_for_many():
    few = {str(c): {"t": [0, 1], "util": [0.5, 1.0]} for c in range(2)}
    fig = cpus_figure(few, {"0": 0.75, "1": 0.75})
    assert [tr["type"] for tr in fig["data"]] == ["scatter", "scatter"]
    assert fig["data"][0]["y"] == [50.0, 100.0]
    many = {str(c): {"t": [0, 1], "util": [0.1, None]} for c in range(64)}
    fig = cpus_figure(many, {})
    assert fig["data"][0]["type"] == "heatmap"
    assert len(fig["data"][0]["z"]) == 64 and fig["data"][0]["z"][0] == [10.0, None]


def test_what_was_not_measured_says_why():
    # GIVEN an analysis of a bundle without /proc or py-spy data
    a = _report(
        metrics={"oncpu_samples": None},
        unmeasured={
            "busy_share_running": "proc unavailable: /proc is not mounted",
            "oncpu_samples": "pyspy failed: py-spy exited with 1",
            "threads_python": "pyspy failed: py-spy exited with 1",
            "host_cpu_util": "proc unavailable: /proc is not mounted",
        },
    )
    data = chart_data(a)
    json.dumps(data, allow_nan=False)  # JSON-ready
    assert data["charts"]["timeline"] == {
        "title": "Thread states over time",
        "about": data["charts"]["timeline"]["about"],
        "figure": None,
        "missing": "proc unavailable: /proc is not mounted",
    }
    assert data["flames"]["cpu"]["tree"] is None
    assert data["flames"]["cpu"]["missing"] == "pyspy failed: py-spy exited with 1"
    assert data["flames"]["waits"]["missing"] == "thread states were not recorded"


@pytest.mark.parametrize("source, unit", [("py-spy", "s"), ("perf+py-spy", "samples")])
def test_on_cpu_unit_follows_its_source(source, unit):
    a = _report(
        metrics={"oncpu_source": source},
        unmeasured={},
        flames={"cpu": [(("thread (1): a", "f (a.py:1)"), 2.0)]},
    )
    cpu = chart_data(a)["flames"]["cpu"]
    assert cpu["unit"] == unit and cpu["tree"]["total"] == 2.0


def test_merged_view_adds_up_the_threads():
    stacks = [
        (("thread (1): a", "serve (s.py:1)", "predict (m.py:2)"), 2.0),
        (("thread (2): b", "serve (s.py:1)", "predict (m.py:2)"), 3.0),
    ]
    a = _report(
        metrics={},
        unmeasured={},
        flames={"wall": stacks, "waits": [(("lock wait", *st), w) for st, w in stacks]},
    )
    flames = chart_data(a)["flames"]
    merged = flames["wall"]["merged"]
    assert merged["label"] == ["all threads", "serve", "predict"]
    assert merged["value"] == [5.0, 5.0, 5.0] and merged["threads"] == []
    assert flames["waits"]["merged"]["label"] == ["all waits", "lock wait", "serve", "predict"]
