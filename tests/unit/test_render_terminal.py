"""The summary printed after a capture, from the fixed, real bundle's report."""

from __future__ import annotations

import copy

import pytest

from diagnose.app.report import diagnose
from diagnose.render.terminal import render_summary
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def report() -> dict:
    return diagnose(FIXTURES / "bundles" / "lock_contention").report


def test_verdict_findings_with_evidence_and_first_fix_then_the_path(report):
    out = render_summary(report, "/b/report.html", width=100)
    lines = out.splitlines()
    v = report["verdict"]
    assert lines[0] == f"Verdict: Lock contention (mutex), confidence {v['confidence'] * 100:.0f}%"
    assert lines[-1] == "Report: /b/report.html"
    top = report["findings"][0]
    assert f"1. Threads queue on one lock [lock/mutex, score {top['score']:.2f}]" in lines
    main = [f for f in report["findings"] if not f["advisory"]]
    assert sum(1 for ln in lines if ln.startswith("   evidence: ")) == min(3, len(main))
    assert sum(1 for ln in lines if ln.startswith("   first fix: ")) == min(3, len(main))
    assert all(len(ln) <= 100 for ln in lines)


def test_at_most_three_findings(report):
    rep = copy.deepcopy(report)
    rep["findings"] = [dict(rep["findings"][0], title=f"finding {i}") for i in range(6)]
    out = render_summary(rep, width=100)
    assert "3. finding 2" in out and "4. finding 3" not in out


def test_what_could_not_be_measured(report):
    rep = copy.deepcopy(report)
    rep["not_measured"] = [
        {
            "collector": "perf",
            "status": "unavailable",
            "reason": "perf is not installed",
            "impact": "",
        }
    ]
    rep["not_evaluated"] = [{"id": "memory.bandwidth", "missing_metrics": ["ipc"]}]
    out = render_summary(rep, width=100)
    assert "Not measured:" in out
    assert "  - perf (unavailable): perf is not installed" in out
    assert "1 rule could not be evaluated: memory.bandwidth" in out  # not "1 rules"


def test_no_escape_sequence_reaches_the_terminal(report):
    rep = copy.deepcopy(report)
    evil = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\nnext line\r\x9b31m"
    rep["target"]["comm"] = evil
    rep["findings"][0]["summary"] = evil
    rep["findings"][0]["fixes"] = [evil]
    out = render_summary(rep, "/b/report.html", color=False, width=100)
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F for c in out)
    assert "\\x1b]0;pwned\\x07" in out
    # colour is ours alone, on the verdict line
    coloured = render_summary(rep, color=True, width=100).splitlines()
    assert coloured[0].startswith("\x1b[")
    assert not any("\x1b" in ln for ln in coloured[1:])


@pytest.mark.parametrize(
    ("ended_by", "words"),
    [
        ("duration", "ran its full duration"),
        ("interrupted (SIGINT)", "ended early: interrupted (SIGINT, Ctrl-C)"),
        ("interrupted (SIGTERM)", "ended early: interrupted (SIGTERM)"),
        ("target_exited", "ended early: the target exited"),
        ("disk_budget", "ended early: the bundle reached --max-bundle-mb"),
        ("disk_full", "ended early: the disk filled up"),
        (None, "its end was not recorded (the capture did not finish)"),
        ("something\x1b[31m new", "ended: something\\x1b[31m new"),
    ],
)
def test_how_the_capture_ended_is_said_in_words(report, ended_by, words):
    # "ended by interrupted (SIGINT)" and "ended by duration" were the manifest's codes
    rep = copy.deepcopy(report)
    rep["capture"]["ended_by"] = ended_by
    line = render_summary(rep, width=200).splitlines()[1]
    assert line.endswith(f"s, {words}"), line
    assert "ended by" not in line


def _long_text(n: int, seed: str) -> str:
    """Words of several lengths, numbered so that a dropped or cut one shows."""
    return " ".join(f"{seed}{i}{'x' * (i % 9)}" for i in range(n)) + " (watch the last words)"


@pytest.mark.parametrize("width", [80, 200])
def test_long_texts_wrap_to_the_width_and_keep_every_word(report, width):
    # GIVEN findings, an advisory, a reason and diagnose's own cost far longer than a line
    # (issue 41: "0.02 while…", "(watch…" were cut at the width or at 200-400 characters)
    rep = copy.deepcopy(report)
    main = [f for f in rep["findings"] if not f.get("advisory")][:1]
    main[0]["summary"] = _long_text(120, "ev")
    main[0]["fixes"] = [_long_text(90, "fix")]
    advisory = dict(main[0], advisory=True, title="An advisory", summary=_long_text(60, "adv"))
    rep["findings"] = [*main, advisory]
    rep["not_measured"] = [
        {"collector": "perf", "status": "unavailable", "reason": _long_text(70, "why")}
    ]
    rep["capture"]["tool_cpu_parts"] = [
        {"part": f"helper-{i}", "cores": 0.01 * i} for i in range(1, 4)
    ]
    # WHEN the summary is rendered at that width
    out = render_summary(rep, "/b/report.html", width=width)
    # THEN nothing is cut: no ellipsis, every word of every text there in order
    assert "…" not in out
    words = out.split()
    for text in (
        main[0]["summary"],
        main[0]["fixes"][0],
        advisory["summary"],
        rep["not_measured"][0]["reason"],
    ):
        expected = text.split()
        start = words.index(expected[0])
        assert words[start : start + len(expected)] == expected
    assert "helper-3 0.03" in out  # the cost line's last part, once cut at the width
    assert all(len(ln) <= width for ln in out.splitlines())


def test_compare_and_sweep_summaries_are_fitted_not_cut():
    # issue 41, item 7: compare's and sweep's summaries cut their texts at fixed lengths
    from diagnose.render.terminal import fit

    long = "Caveat: " + " ".join(f"word{i}" for i in range(120))
    lines = fit(["Verdict: short", long, "  - an indented item " + "x" * 150], width=80)
    assert all(len(line) <= 80 for line in lines), lines
    joined = " ".join(" ".join(lines).split())
    assert all(f"word{i}" in joined for i in range(120)) and "…" not in joined
    assert lines[0] == "Verdict: short" and lines[2].startswith("  ")
