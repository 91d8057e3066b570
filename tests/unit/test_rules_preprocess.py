"""Preprocessing rules: one saturated thread doing the preprocessing is a serial stage;
most of the process's CPU going to preprocessing is heavy preprocessing."""

from tests.unit.rulekit import UNKNOWN, expect, fired, healthy, verdict, when

# measured on samples/preprocess_tokenize.py: one tokeniser thread, two model workers that
# wait for it, and for the GIL it holds
SERIAL = {
    "busy_threads_mean": 2.8,
    "threads_busy": 3,
    "busy_share_running": 0.35,
    "busy_share_runnable": 0.2,
    "busy_share_gil": 0.43,
    "gil_waiters_mean": 1.5,
    "gil_holder_preprocess_share": 0.88,  # the tokeniser holds the GIL they wait for
    "process_cpu_share": 0.46,
    "oncpu_source": "py-spy",
    "oncpu_share_compute": None,
    "oncpu_share_memory": None,
    "oncpu_share_allocator": None,
    "oncpu_share_preprocess": 0.75,
    "oncpu_share_model": 0.0,
    "oncpu_share_other": 0.25,
    "oncpu_share_inference": 0.0,
    "preprocess_top_function": "normalise (samples/preprocess_tokenize.py:35)",
    "preprocess_threads": 1,
    "preprocess_top_thread_share": 1.0,
    "preprocess_top_thread_busy": 0.97,
}


def test_one_saturated_preprocessing_thread_is_the_verdict_over_the_gil_waits_it_causes():
    m = healthy(**SERIAL)
    # the GIL waits are the stage's cost, told by preprocess.serial, not a second story
    assert "preprocess.serial" in fired(m) and "lock.gil" not in fired(m)
    v = expect(m, "preprocess", "serial")
    assert "process pool" in v.findings[0].fixes[0]
    assert "normalise (samples/preprocess_tokenize.py:35)" in v.findings[0].fixes[0]
    shown = {e["metric"] for e in v.findings[0].evidence}
    assert {"busy_share_gil", "gil_holder_preprocess_share"} <= shown


def test_gil_waits_behind_other_code_stay_a_gil_finding_next_to_the_serial_stage():
    # a close race (measured 0.42-0.47 against 0.45-0.50): with the GIL held by code other
    # than the preprocessing, the GIL rule competes on its own score
    m = healthy(**{**SERIAL, "gil_holder_preprocess_share": 0.1, "busy_share_gil": 0.8})
    assert {"preprocess.serial", "lock.gil"} <= fired(m)
    assert (verdict(m).primary, verdict(m).kind) == ("lock", "gil")


def test_without_the_gil_sampler_the_gil_rule_waits_and_the_stage_is_still_the_verdict():
    m = healthy(**{**SERIAL, "gil_holder_preprocess_share": None})
    assert when("lock.gil", m) is UNKNOWN
    expect(m, "preprocess", "serial")


def test_a_single_preprocessing_thread_with_time_to_spare_is_not_serial():
    m = healthy(**{**SERIAL, "preprocess_top_thread_busy": 0.5})
    assert when("preprocess.serial", m) is False


def test_preprocessing_spread_over_threads_is_heavy_not_serial():
    m = healthy(
        **{
            **SERIAL,
            "preprocess_top_thread_share": 0.3,
            "preprocess_threads": 4,
            "process_cpu_share": 0.9,
            "busy_share_gil": 0.05,
            "gil_waiters_mean": 0.1,
        }
    )
    assert when("preprocess.serial", m) is False
    assert when("preprocess.heavy", m) is True
    assert (verdict(m).primary, verdict(m).kind) == ("preprocess", "cpu")


def test_a_third_of_the_cpu_in_preprocessing_is_neither():
    m = healthy(**{**SERIAL, "oncpu_share_preprocess": 0.3, "process_cpu_share": 0.9})
    assert not {"preprocess.serial", "preprocess.heavy"} & fired(m)


def test_preprocessing_unknown_without_stacks():
    m = healthy(**{**SERIAL, "oncpu_share_preprocess": None, "process_cpu_share": 0.9})
    assert when("preprocess.serial", m) is UNKNOWN
    assert when("preprocess.heavy", m) is UNKNOWN
    # an unknown share cannot make a false condition true: three-valued logic
    assert when("preprocess.heavy", {**m, "process_cpu_share": 0.3}) is False
