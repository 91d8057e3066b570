"""What the CPU does, whatever stage asked for it (tests/targets/memory_traffic.py): copies
into freshly allocated buffers are first touches of fresh pages (the kernel's page-fault
path under the copy: blind batch 6's s06, read as preprocessing), and a matrix-vector
product streams its matrix once per call (BLAS level 2: batch 6's s07, read as compute).
NumPy's own elementwise loops are arithmetic over a table in cache and not over a large one:
the memory the process touched decides, not the loops' names (batch 14's s03). Each against
its contrast, by the findings and the kernel shares, not by rank: beside a busy neighbour
the run-queue wait may outrank them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.cli import attach_to_target

pytestmark = pytest.mark.e2e
TARGET = str(ROOT / "tests" / "targets" / "memory_traffic.py")


def _capture(tmp_path: Path, mode: str) -> tuple[dict, set[str]]:
    report = attach_to_target(TARGET, mode, tmp_path / mode)
    return report["metrics"], {f["id"] for f in report["findings"]}


def test_copies_into_fresh_buffers_are_the_allocator_s(tmp_path: Path):
    m, found = _capture(tmp_path, "fresh")
    assert m["kernel_share_allocator"] >= 0.25, m
    assert "memory_bandwidth.allocator" in found, found
    m, found = _capture(tmp_path, "reuse")
    assert m["kernel_share_allocator"] < 0.1 and m["kernel_share_memory"] >= 0.35, m
    assert "memory_bandwidth.allocator" not in found, found


def test_a_matrix_vector_product_is_memory_bound_and_a_matrix_product_compute(tmp_path: Path):
    m, found = _capture(tmp_path, "gemv")
    assert m["kernel_share_memory"] >= 0.5 > m["kernel_share_compute"], m
    assert "memory_bandwidth.memory_bound_kernels" in found and "compute.kernels" not in found
    # the span it ran over: the 64 MB table, read again each call (70.8 MB in all, here)
    streamed = m["touched_mb"]
    assert streamed is not None and streamed >= 64, m
    m, found = _capture(tmp_path, "gemm")
    assert m["kernel_share_compute"] >= 0.5 > m["kernel_share_memory"], m
    assert "compute.kernels" in found and "memory_bandwidth.memory_bound_kernels" not in found
    # a table that stays in cache, and the interpreter's own pages: 15.1 MB here
    assert m["touched_mb"] is not None and m["touched_mb"] < streamed / 2, m


def test_array_loops_over_a_table_in_cache_are_compute_and_over_a_large_one_not(tmp_path: Path):
    # the same NumPy expression, ((table - q) ** 2).sum(1): by its loops' names nothing
    # tells the two apart (blind batch 14's s03, compute, was inconclusive); the span does
    m, found = _capture(tmp_path, "near")
    assert m["oncpu_share_array_loops"] >= 0.5, m
    assert m["touched_to_llc"] is not None and m["touched_to_llc"] < 1, m
    assert "compute.cached_array_loops" in found, found
    m, found = _capture(tmp_path, "far")
    assert m["touched_mb"] is not None and m["touched_mb"] >= 64, m
    assert "compute.cached_array_loops" not in found, found
