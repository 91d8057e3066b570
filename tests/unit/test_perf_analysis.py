"""Pieces of the perf analysis on hand-built records: native wait kinds, the false-sharing
rule over c2c metrics (from a real report), and that it never fires without them."""

from __future__ import annotations

import pandas as pd

from diagnose.analyse.frames import user_leaf
from diagnose.analyse.locks import max_concurrent
from diagnose.analyse.threads import native_wait_kind
from diagnose.verdict import judge, load_rules
from tests.conftest import FIXTURES


def test_native_wait_kinds():
    assert native_wait_kind("__GI___lll_lock_wait (libc.so.6)") == "mutex"
    assert native_wait_kind("pthread_mutex_lock@@GLIBC_2.2.5 (libc.so.6)") == "mutex"
    assert native_wait_kind("x (libc.so.6)", "LOCK_PI") == "mutex"
    assert native_wait_kind("__futex_abstimed_wait_common (libc.so.6)") == "condition"
    assert native_wait_kind("pthread_cond_wait@@GLIBC_2.3.2 (libc.so.6)") == "condition"
    assert native_wait_kind("sgemm_kernel (libopenblas.so)") == ""


def test_user_leaf_skips_kernel_frames():
    stack = ("start_thread (libc.so.6)", "__lll_lock_wait (libc.so.6)",
             "do_syscall_64 ([kernel.kallsyms])", "__schedule ([kernel.kallsyms])")  # fmt: skip
    assert user_leaf(stack) == "__lll_lock_wait (libc.so.6)"
    assert user_leaf(("__schedule ([kernel.kallsyms])",)) == ""


def test_max_concurrent_waits():
    waits = pd.DataFrame({"t": [0.0, 0.1, 0.2, 1.0], "dur": [0.5, 0.5, 0.05, 0.1]})
    assert max_concurrent(waits) == 3


BASE = {"busy_threads_mean": 2.0, "busy_share_running": 0.8}  # false sharing shows as CPU time


def c2c_metrics(offsets: int) -> dict:
    # the AMD IBS report (tests/fixtures/perf/c2c-amd-ibs.stdio.txt): 2096 HITMs / 3266 loads
    return BASE | {
        "c2c_lines_contended": 1, "c2c_hitm_load_share": 0.6418,
        "c2c_top_line_address": "0x20ea08034080", "c2c_top_line_hitm_share": 1.0,
        "c2c_top_line_offsets": offsets, "c2c_top_line_threads": 12,
        "c2c_top_line_symbols": "go.go:0",
    }  # fmt: skip


def verdict(metrics: dict, unmeasured: dict | None = None):
    return judge(load_rules([]), metrics, unmeasured or {})


def test_false_sharing_fires_on_two_offsets_of_a_contended_line():
    assert (FIXTURES / "perf" / "c2c-amd-ibs.stdio.txt").is_file()
    v = verdict(c2c_metrics(offsets=2))
    f = next(f for f in v.findings if f.rule.id == "memory_bandwidth.false_sharing")
    assert f.rule.category == "memory_bandwidth" and f.rule.kind == "false_sharing"
    assert "0x20ea08034080" in f.summary and "2 different offsets" in f.summary


def test_one_offset_is_true_sharing_not_false_sharing():
    v = verdict(c2c_metrics(offsets=1))
    assert all(f.rule.id != "memory_bandwidth.false_sharing" for f in v.findings)


def test_without_c2c_the_rule_is_not_evaluated():
    reason = "c2c unavailable: perf c2c memory sampling: not supported"
    v = verdict(BASE, {"c2c_lines_contended": reason, "c2c_hitm_load_share": reason})
    ne = next(n for n in v.not_evaluated if n.rule.id == "memory_bandwidth.false_sharing")
    assert reason in ne.reasons
    assert all(f.rule.id != "memory_bandwidth.false_sharing" for f in v.findings)
