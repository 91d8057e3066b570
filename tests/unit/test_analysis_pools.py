"""Native thread pools (diagnose/analyse/pools.py) on hand-built perf samples.

Principle: a thread without Python frames belongs to the pool whose libraries its frames are
in; a sample whose leaf-most user-space frame is the pool's wait loop is spin, in any thread.
"""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.analyse import oncpu, pools, service
from diagnose.analyse.model import Analysis, OnCpuSample

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
    service.lone_process(ctx)
    return ctx


def test_pool_threads_their_cpu_and_spin_and_the_size_fix():
    ctx = run_pools(
        [
            (2, (CLONE, SERVER), 4.0),  # the pool thread waiting for work: spin
            (2, (CLONE, SERVER, GEMM), 2.0),  # the pool thread computing
            (1, (HANDLE, EXEC), 2.0),  # the caller waiting for its helper: spin
            (1, (HANDLE, GEMM), 2.0),
        ],
        cores_available=2.0,
        app_threads_busy=2,
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


# torch's pool threads are OpenMP's: their frames are in libtorch, their waits in the copy of
# libgomp the wheel bundles, which perf cannot name (the runtime computes nothing itself)
TORCH_GEMM = "mkl_blas_def_sgemm_kernel_0_zen (libtorch_cpu.so)"
GOMP = "[unknown] (libgomp.so.1)"
TORCH_STACK = (CLONE, GOMP, "at::internal::invoke_parallel (libtorch_cpu.so)")


def test_a_torch_pool_thread_waiting_in_unnamed_libgomp_code_is_spinning():
    ctx = run_pools(
        [
            (2, (*TORCH_STACK, GOMP), 6.0),  # the pool thread between regions
            (2, (*TORCH_STACK, TORCH_GEMM), 2.0),
            (1, (HANDLE, "at::native::addmm (libtorch_cpu.so)", GOMP), 1.0),  # the caller's barrier
            (1, (HANDLE, TORCH_GEMM), 1.0),
        ],
        runq_to_oncpu_ratio=2.0,
    )
    m = ctx.metrics
    assert m["pool_name"] == "torch" and m["pool_threads"] == 1
    assert m["oncpu_share_spin"] == 0.7
    assert m["spin_share_contended"] == 0.7  # threads queued for cores: all of it costs


def test_near_miss_a_pool_spinning_on_a_core_nobody_wanted_costs_only_its_callers_spin():
    samples = [
        (2, (*TORCH_STACK, GOMP), 6.0),
        (2, (*TORCH_STACK, TORCH_GEMM), 2.0),
        (1, (HANDLE, "at::native::addmm (libtorch_cpu.so)", GOMP), 1.0),
        (1, (HANDLE, TORCH_GEMM), 1.0),
    ]
    m = run_pools(samples, runq_to_oncpu_ratio=0.0).metrics
    assert m["oncpu_share_spin"] == 0.7
    assert m["spin_share_contended"] == 0.1  # the caller's own wait at the barrier
    m = run_pools(samples, runq_to_oncpu_ratio=0.5).metrics
    assert m["spin_share_contended"] == 0.4  # half of the pool thread's 0.6 was wanted


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


# --- sized for the service, never to the value in force (issue 41, item 2) ------------------

SPINNING = [(2, (CLONE, SERVER), 4.0), (1, (HANDLE, GEMM), 2.0)]


def test_a_size_the_pool_already_runs_with_is_not_a_fix_the_next_lever_is():
    # GIVEN one process, 1 application thread, 2 cores, OpenBLAS at its default (2 CPUs)
    ctx = run_pools(SPINNING, cores_available=2.0, app_threads_busy=1, logical_cpus=2)
    fix = ctx.metrics["pool_size_fix"]
    # THEN no OPENBLAS_NUM_THREADS=2 (what it runs with): the threads that call it are the lever
    assert "OPENBLAS_NUM_THREADS" not in fix and "already runs 2 threads" in fix, fix
    assert "the library's default" in fix and ctx.out.oncpu["pools"][0]["fix"] == fix


def test_two_workers_on_the_same_cores_are_sized_together():
    # GIVEN two workers, each alone would be told its default (2 // 1 = 2)
    workers = [
        run_pools(SPINNING, cores_available=2.0, app_threads_busy=1, logical_cpus=2)
        for _ in range(2)
    ]
    # WHEN analysed as one service
    service.share_cores([w.out for w in workers], FR)
    # THEN each worker's fix is the size that fits 2 application threads on 2 cores
    for w in workers:
        assert w.metrics["service_app_threads_busy"] == 2
        assert w.metrics["intra_op_suggestion"] == 1
        assert w.metrics["pool_size_fix"].startswith("OPENBLAS_NUM_THREADS=1 ")


def test_near_miss_a_setting_in_force_above_the_fit_is_still_a_fix():
    ctx = run_pools(
        SPINNING, cores_available=2.0, app_threads_busy=2, logical_cpus=2, pool_threads_env=4
    )
    assert ctx.metrics["pool_size_fix"].startswith("OPENBLAS_NUM_THREADS=1 ")


# --- a pipeline of processes: which feed the model (issue 39, batch 13's s12) --------------


def _analysis(busy: float | None = None, **metrics: object) -> Analysis:
    """An analysis with these metrics, and one thread ``busy`` of its time (None: unmeasured)."""
    sends = str(metrics.pop("sends", ""))
    per = None if busy is None else pd.DataFrame({"busy": [busy * 10.0], "total": [10.0]})
    return Analysis(
        metrics=dict(metrics), unmeasured={}, per_thread=per, thread_time=None,
        oncpu={"structure": {"sends": sends}},
    )  # fmt: skip


SEND = "_ConnectionBase.send_bytes (/usr/lib/python3.11/multiprocessing/connection.py:200)"


def test_a_process_sending_to_the_model_process_is_its_feeding_stage():
    # GIVEN a pipeline: 11 parses and sends, 12 runs the model (and sends its results on),
    # 13 sends nothing (a metrics child)
    parser = _analysis(model_call_threads=0, sends=SEND, process_cpu_share=0.46)
    model = _analysis(model_call_threads=1, sends=SEND, process_cpu_share=0.09)
    other = _analysis(model_call_threads=0, process_cpu_share=0.01)
    got = service.feeding_processes({11: parser, 12: model, 13: other})
    # THEN only the parser feeds the model, and the evidence names both
    assert set(got) == {11} and "PID 12" in got[11] and "send_bytes" in got[11], got
    # its stage's CPU is its own, the model's stays the service's
    for a in (parser, model, other):
        a.metrics["service_cpu_share"] = a.metrics["stage_cpu_share"] = 0.56
    service.share_cores([parser, model, other], FR, [parser])
    assert parser.metrics["stage_cpu_share"] == 0.46
    assert model.metrics["stage_cpu_share"] == 0.56


def test_near_miss_no_model_anywhere_means_no_feeding_stage():
    # replicas of a service without a model call (or a model not recognised) stay replicas
    a = _analysis(0.99, model_call_threads=0, sends=SEND, process_cpu_cores=0.9)
    b = _analysis(0.99, model_call_threads=0, sends=SEND, process_cpu_cores=0.9)
    assert service.feeding_processes({1: a, 2: b}) == {}


def test_a_saturated_sender_whose_siblings_wait_is_the_pipeline_s_stage():
    # GIVEN no model seen anywhere (a NumPy projection at 0.01 cores): 11 parses at 99% of
    # one thread and sends; 12 and 13 wait on the queue
    parser = _analysis(0.99, model_call_threads=0, sends=SEND, process_cpu_cores=0.96)
    scorers = [_analysis(0.4, model_call_threads=0, process_cpu_cores=0.01) for _ in range(2)]
    got = service.feeding_processes({11: parser, 12: scorers[0], 13: scorers[1]})
    # THEN the parser is the stage that sets the pace, with the figures that say so
    assert set(got) == {11}, got
    assert "99% busy" in got[11] and "0.02 cores together against its 0.96" in got[11]


@pytest.mark.parametrize(
    ("busy", "theirs"),
    [(0.6, 0.01), (0.99, 0.2)],  # its thread not saturated; the others working too
)
def test_near_miss_a_sender_is_a_stage_only_saturated_and_waited_for(busy, theirs):
    parser = _analysis(busy, model_call_threads=0, sends=SEND, process_cpu_cores=0.96)
    scorers = [_analysis(0.4, model_call_threads=0, process_cpu_cores=theirs) for _ in range(2)]
    assert service.feeding_processes({11: parser, 12: scorers[0], 13: scorers[1]}) == {}
