"""Native thread pools (diagnose/analyse/pools.py) on hand-built perf samples.

Principle: a thread without Python frames belongs to the pool whose libraries its frames are
in; a sample whose leaf-most user-space frame is the pool's wait loop is spin, in any thread.
"""

from __future__ import annotations

from diagnose.analyse import oncpu, pools
from diagnose.analyse.model import OnCpuSample

from .analysis import FR, bundle_data, context

BLAS = "libscipy_openblas64_.so"
SERVER = f"blas_thread_server ({BLAS})"
GEMM = f"sgemm_kernel_HASWELL ({BLAS})"
EXEC = f"exec_blas ({BLAS})"
CLONE = "clone3 (libc.so.6)"
HANDLE = "handle (app.py:20)"


def run_pools(samples, **metrics):  # type: ignore[no-untyped-def]
    # thread 1 has py-spy stacks (an application thread); 2 and 3 do not
    ctx = context(bundle_data([], [(1, 0.0, 1.0, 0)], {0: (HANDLE,)}))
    ctx.metrics.update({"oncpu_source": "perf+py-spy", **metrics})
    ctx.oncpu = [OnCpuSample(t, st, w, FR.categorize(st)) for t, st, w in samples]
    pools.pools(ctx)
    oncpu.oncpu_shares(ctx)
    return ctx


def test_pool_threads_their_cpu_and_spin_and_the_size_fix():
    ctx = run_pools(
        [
            (2, (CLONE, SERVER), 4.0),  # the pool thread waiting for work: spin
            (2, (CLONE, SERVER, GEMM), 2.0),  # the pool thread computing
            (1, (HANDLE, EXEC), 2.0),  # the caller waiting for its helper: spin
            (1, (HANDLE, GEMM), 2.0),
        ],
        intra_op_suggestion=1,
    )
    m = ctx.metrics
    assert m["pool_threads"] == 1
    assert m["pool_name"] == "OpenBLAS"
    assert m["pool_cpu_share"] == 0.6
    assert m["oncpu_share_spin"] == 0.6
    assert m["pool_size_fix"].startswith("OPENBLAS_NUM_THREADS=1 ")
    assert ctx.out.oncpu["pools"][0]["threads"] == [2]
    # a wait loop is not compute, whatever library it is in
    assert m["oncpu_share_compute"] == 0.4


def test_near_miss_a_native_thread_outside_any_pool_library_is_no_pool_thread():
    ctx = run_pools([(3, (CLONE, "worker_loop (libmyext.so)"), 5.0), (1, (HANDLE, GEMM), 5.0)])
    m = ctx.metrics
    assert m["pool_threads"] == 0
    assert m["pool_cpu_share"] == 0.0
    assert m["oncpu_share_spin"] == 0.0


def test_near_miss_a_pool_thread_computing_is_not_spinning():
    ctx = run_pools([(2, (CLONE, SERVER, GEMM), 5.0)])
    assert ctx.metrics["pool_threads"] == 1
    assert ctx.metrics["oncpu_share_spin"] == 0.0


def test_without_native_stacks_nothing_is_measured():
    ctx = run_pools([(1, (HANDLE,), 1.0)], oncpu_source="py-spy")
    assert ctx.metrics["oncpu_share_spin"] is None
    assert "pool_threads" not in ctx.metrics
