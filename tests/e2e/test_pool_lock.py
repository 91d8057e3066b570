"""A native pool's own lock (tests/targets/blas_callers.py): eight application threads call
NumPy's OpenBLAS with a pool of 8 on the host's cores, and OpenBLAS lets one threaded GEMM
in at a time through a mutex in its own data. Blind batch 14's s04 (a Flask thread per
connection calling an 8-thread OpenBLAS) was read first as thread fan-out at 1.00, then as
the application's lock: the waiters' native stacks end in libc, and the line waiting is the
application's. Where the lock lies says whose it is. The contrast: a pool of one thread,
the same eight callers, no pool lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.cli import attach_to_target

pytestmark = pytest.mark.e2e
TARGET = str(ROOT / "tests" / "targets" / "blas_callers.py")


def _ids(report: dict) -> list[str]:
    return [f["id"] for f in report["findings"]]


def test_callers_queueing_on_the_pool_s_own_lock_are_oversubscription(tmp_path: Path):
    report = attach_to_target(TARGET, "8", tmp_path / "eight")
    m, v = report["metrics"], report["verdict"]
    assert "openblas" in (m["lock_top_library"] or "").lower(), m["lock_top_address"]
    assert m["lock_top_pool"] == "OpenBLAS", m
    assert m["lock_top_share"] >= 0.3, m
    assert "scheduling.pool_lock" in _ids(report) and "lock.contended" not in _ids(report)
    assert (v["primary"], v["kind"]) == ("scheduling", "oversubscription"), v["headline"]


def test_one_pool_thread_per_caller_takes_no_pool_lock(tmp_path: Path):
    report = attach_to_target(TARGET, "1", tmp_path / "one")
    m = report["metrics"]
    assert m["lock_top_pool"] in ("", None), m
    assert "scheduling.pool_lock" not in _ids(report), report["findings"]
