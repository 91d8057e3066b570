"""Counts agree with their nouns wherever diagnose prints them (issue 41: "1 application
threads"): one helper, used by the code and by rule files' ``{metric:count NOUN}``."""

from __future__ import annotations

import pytest

from diagnose.verdict.ruleset import load_rules
from diagnose.verdict.template import TemplateError, compile_template
from diagnose.words import count, plural


@pytest.mark.parametrize(
    ("n", "noun", "text"),
    [
        (1, "application thread", "1 application thread"),
        (0, "application thread", "0 application threads"),
        (3, "process", "3 processes"),
        (1, "entry", "1 entry"),
        (2, "entry", "2 entries"),
        (2, "address", "2 addresses"),
        (2, "day", "2 days"),
        ("1.5", "core", "1.5 cores"),
        ("n/a", "worker", "n/a workers"),
    ],
)
def test_count_agrees(n, noun, text):
    assert count(n, noun) == text


def test_plural_takes_the_last_word():
    assert plural("busy thread") == "busy threads"


def test_rule_templates_count_with_the_number_as_shown():
    # GIVEN a template counting metrics, one with a number format
    t = compile_template(
        "{a:count application thread} on {b:count core}, {c:.0f count intra-op thread} each",
        {"a": 1, "b": 1, "c": 1},
    )
    # WHEN rendered with one, many, fractional and unmeasured values
    assert t.render({"a": 1, "b": 1.0, "c": 1.2}) == (
        "1 application thread on 1 core, 1 intra-op thread each"
    )
    assert t.render({"a": 4, "b": 2.5, "c": None}) == (
        "4 application threads on 2.5 cores, n/a intra-op threads each"
    )


@pytest.mark.parametrize("spec", ["count", "count Thread", "count thread{", ".0% count thread"])
def test_bad_count_specs_are_refused(spec):
    with pytest.raises(TemplateError):
        compile_template(f"{{a:{spec}}}", {"a": 1})


def test_no_builtin_rule_prints_a_count_metric_before_a_plural_noun():
    # GIVEN every message of the built-in rules WHEN rendered with the count metrics at 1
    ones = {
        "app_threads_busy": 1, "cores_available": 1, "cpu_bound_threads": 1,
        "lock_top_waiters": 1, "preprocess_threads": 1, "threads_busy": 1,
        "service_processes": 1, "intra_op_threads_per_app": 1.0,
        "c2c_top_line_threads": 1, "c2c_top_line_offsets": 1,
        "false_sharing_top_threads": 1, "false_sharing_top_offsets": 1,
        "true_sharing_top_threads": 1,
    }  # fmt: skip
    texts = []
    for rule in load_rules().rules:
        for t in (rule.summary, *rule.fixes):
            texts.append(t.render(ones))
    # THEN none says "1 ...s" for them
    bad = [t for t in texts for w in ("1 application threads", "1 cores", "1 threads",
                                      "1 processes", "1 busy threads", "1 intra-op threads")
           if w in t]  # fmt: skip
    assert bad == []
    assert any("1 application thread" in t for t in texts)
