"""One analysis step at a time, each on a few hand-built rows: the host, scheduling, the GIL,
on-CPU stages, flame graphs, hardware counters, futex wait kinds, and the pipeline."""

from __future__ import annotations

import pandas as pd
import pytest

from diagnose.analyse import counters, flames, gil, host, oncpu, sched, threads
from diagnose.analyse.model import ModelPath, Structure
from diagnose.analyse.pipeline import STEPS, analyse_data
from diagnose.analyse.registry import METRICS
from diagnose.formats.stacks import ThreadFrame
from tests.unit.analysis import (
    FR,
    FUTEX,
    NANOSLEEP,
    bundle_data,
    context,
    futex_table,
    run,
    ticks,
)

GIL = {"python": {"runtime": {"start": "0x1000", "end": "0x2000"}}}


# --- the target process and its host -------------------------------------------------------


def test_system_metrics_read_capacity_libraries_and_pool_settings():
    system = {
        "capacity": {"cores_available": 8.0, "usable_cpus": [0, 1, 2, 3, 4, 5, 6, 7]},
        "cpu": {"logical_cpus": 16, "physical_cores": 8},
        "libraries": {"openmp": ["libgomp.so.1"], "blas": ["libopenblas.so"], "onnxruntime": ["x"]},
        "env": {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "2,1", "ORT_NUM_THREADS": "zero"},
        "python": {"version": "3.12"},
    }
    m = run(bundle_data(system=system), host.system_metrics).metrics
    assert m["cpus_usable"] == "0-7"
    assert m["pin_suggestion"] == "cores 1-7 for inference, 0 for the web server"
    assert (m["openmp_loaded"], m["blas_library"], m["ml_runtime"]) == (
        1,
        "libopenblas.so",
        "onnxruntime",
    )
    assert (m["pool_threads_env"], m["pool_env_set"]) == (2, 1)  # the smallest; junk ignored
    assert m["python_version"] == "3.12"


@pytest.mark.parametrize(
    ("touched", "caches", "mb", "ratio"),
    [
        # 340 MiB touched on a host whose largest cache is a 32 MiB L3: ten times the cache
        ({"bytes": 340 * 2**20, "seconds": 12.0},
         [{"level": "2", "type": "Unified", "size": "1024K"}, {"level": "3", "type": "Unified", "size": "32768K"}],
         340.0, 10.625),
        # 4 MiB on the same host: it all fits
        ({"bytes": 4 * 2**20, "seconds": 12.0}, [{"level": "3", "type": "Unified", "size": "32M"}], 4.0, 0.125),
        # no cache sizes known: the span alone
        ({"bytes": 2**20, "seconds": 1.0}, [], 1.0, None),
    ],
)  # fmt: skip
def test_the_memory_touched_is_measured_against_the_last_level_cache(touched, caches, mb, ratio):
    m = run(
        bundle_data(system={"touched": touched, "cpu": {"caches": caches}}), host.system_metrics
    ).metrics
    assert m["touched_mb"] == mb and m.get("touched_to_llc") == ratio


def test_no_touched_memory_when_the_bits_could_not_be_cleared():
    m = run(bundle_data(system={"touched": None, "cpu": {}}), host.system_metrics).metrics
    assert "touched_mb" not in m and "touched_to_llc" not in m


def test_process_and_host_cpu_tell_the_target_s_cpu_from_diagnose_s_and_others():
    # GIVEN a target using 1 core of 2 for 2 s, diagnose 0.2 core, both CPUs 80% busy
    process = pd.DataFrame({
        "t": [0.0, 1.0, 2.0], "utime": [0.0, 0.9, 1.8], "stime": [0.0, 0.1, 0.2],
        "rss_bytes": [100 * 2**20, 110 * 2**20, 120 * 2**20], "minflt": [0, 50, 100],
        "majflt": [0, 0, 2], "threads": [4, 4, 4], "tool_cpu_s": [0.0, 0.2, 0.4],
    })  # fmt: skip
    cpus = pd.DataFrame({
        "t": [0.0, 0.0, 2.0, 2.0], "cpu": [0, 1, 0, 1],
        "busy_jiffies": [0.0, 0.0, 160.0, 160.0], "total_jiffies": [0.0, 0.0, 200.0, 200.0],
    })  # fmt: skip
    data = bundle_data(process=process, cpus=cpus)
    m = run(data, host.system_metrics, host.process_metrics, host.cpu_metrics).metrics
    assert m["process_cpu_cores"] == pytest.approx(1.0)
    assert m["process_sys_share"] == pytest.approx(0.1)
    assert m["rss_mb"] == pytest.approx(120.0) and m["rss_growth_mb_per_min"] == pytest.approx(
        600.0
    )
    assert (m["minflt_per_s"], m["majflt_per_s"]) == (50.0, 1.0)
    assert m["process_cpu_share"] == pytest.approx(0.5)
    assert m["host_cpu_util"] == pytest.approx(0.8)
    assert m["tool_cpu_share"] == pytest.approx(0.1)
    assert m["host_other_cpu_share"] == pytest.approx(0.3)  # 0.8 - 0.5
    assert m["host_foreign_cpu_share"] == pytest.approx(0.2)  # minus diagnose's 0.1


def test_diagnose_s_cpu_is_read_over_the_ticks_that_read_it():
    # GIVEN diagnose's CPU read at every 5th tick only (empty between), 0.1 core, and a
    # last tick without a reading
    t = [i * 0.05 for i in range(12)]
    tool = [round(i * 0.005, 4) if i % 5 == 0 else float("nan") for i in range(12)]
    process = pd.DataFrame({
        "t": t, "utime": t, "stime": [0.0] * 12, "rss_bytes": [2**20] * 12, "minflt": [0] * 12,
        "majflt": [0] * 12, "threads": [4] * 12, "tool_cpu_s": tool,
    })  # fmt: skip
    m = run(bundle_data(process=process), host.process_metrics).metrics
    # THEN the rate is over the 0.5 s between the first and last reading, not the 0.55 s span
    assert m["tool_cpu_cores"] == pytest.approx(0.1)


# --- thread states and scheduling ----------------------------------------------------------


def test_thread_metrics_and_proc_scheduling_on_two_threads():
    # GIVEN thread 1 running 0.05 s and queued 0.05 s per 0.1 s (5 timeslices per
    # interval), thread 2 asleep in nanosleep
    rows = ticks(1, [0, 0.05, 0.1, 0.15, 0.2], [0, 0.05, 0.1, 0.15, 0.2])
    for i, row in enumerate(rows):
        row.update(slices=5 * i, vcsw=i, ivcsw=4 * i, migrations=i)
    rows += ticks(2, [0.0] * 5, state="S", syscall=NANOSLEEP, vcsw=0, ivcsw=0, migrations=0)
    steps = (
        host.system_metrics,
        threads.thread_states,
        threads.thread_metrics,
        sched.proc_scheduling,
    )
    ctx = run(bundle_data(rows), *steps)
    m = ctx.metrics
    # THEN half of thread 1's busy time is waiting for a core; thread 2 is idle
    assert m["busy_share_running"] == pytest.approx(0.5)
    assert m["busy_share_runnable"] == pytest.approx(0.5)
    assert m["idle_share"] == pytest.approx(0.5)
    assert (m["threads_total"], m["threads_busy"], m["cpu_bound_threads"]) == (2, 1, 1)
    assert m["cpu_demand_threads_mean"] == pytest.approx(1.0)
    assert m["runnable_per_core"] == pytest.approx(0.5)
    # 0.05 s queued per 5 timeslices: 10 ms per timeslice
    assert m["runq_delay_p50_ms"] == pytest.approx(10.0)
    assert m["ctx_switches_voluntary_per_s"] == pytest.approx(10.0)
    assert m["ctx_switches_involuntary_per_s"] == pytest.approx(40.0)
    assert m["involuntary_switch_share"] == pytest.approx(0.8)
    assert m["migrations_per_s"] == pytest.approx(10.0)
    assert m["runnable_threads_mean"] == pytest.approx(1.0)


def test_perf_scheduling_measures_each_event():
    # GIVEN perf's switch-outs: two preemptions (state R) queued 1 ms and 3 ms, one
    # voluntary sleep of 0.5 s in a futex wait that came back on another CPU
    offcpu = pd.DataFrame({
        "t": [0.0, 0.1, 0.2], "tid": [7, 7, 8], "cpu": [0, 0, 1], "state": ["R", "R+", "S"],
        "dur": [0.001, 0.003, 0.5], "cpu_in": [0, 0, 0], "runq": [0.001, 0.003, float("nan")],
        "waker": [float("nan")] * 3, "stack_id": [0, 0, 1],
    })  # fmt: skip
    stacks = {
        0: ("work (libx.so)",),
        1: ("start_thread (libc.so.6)", "__lll_lock_wait (libc.so.6)"),
    }
    ctx = run(bundle_data(sched_offcpu=offcpu, sched_stacks=stacks), sched.perf_scheduling)
    m = ctx.metrics
    assert m["sched_runq_events"] == 2
    assert m["sched_runq_delay_p50_ms"] == pytest.approx(2.0)
    assert m["sched_runq_delay_max_ms"] == pytest.approx(3.0)
    window = 0.7  # first switch-out to the last one's end
    assert m["sched_switches_involuntary_per_s"] == pytest.approx(round(2 / window, 1))
    assert m["sched_migrations_per_s"] == pytest.approx(round(1 / window, 2))
    assert m["offcpu_top_site"] == "__lll_lock_wait (libc.so.6)" and m["offcpu_top_share"] == 1.0
    (((root, state, *_), secs),) = ctx.out.flames["offcpu"]
    assert ThreadFrame.parse(root) == ThreadFrame(8, "") and state == "off-CPU (S)"
    assert secs == pytest.approx(0.5)


def _births(life_s: float, n: int = 40, extra: pd.DataFrame | None = None) -> dict:
    """perf_scheduling's metrics of a process with 2 threads /proc saw at its start, busy
    1.0 thread on average, and ``n`` threads started 0.01 s apart over 0.4 s, each living
    ``life_s`` (two switch-outs: one at its start, its last as it ends)."""
    t, tid, state, dur, waker = [0.0, 0.0], [1, 2], ["S", "S"], [0.4, 0.4], [None, None]
    for i in range(n):
        start = 0.01 * i
        t += [start, start + life_s]
        tid += [100 + i] * 2
        state += ["S", "X"]
        dur += [0.0, float("nan")]
        waker += [None, None]
    offcpu = pd.DataFrame({"t": t, "tid": tid, "cpu": 0, "state": state, "dur": dur,
                           "cpu_in": 0, "runq": float("nan"), "waker": waker,
                           "stack_id": 0})  # fmt: skip
    if extra is not None:
        offcpu = pd.concat([offcpu, extra], ignore_index=True)
    rows = ticks(1, [0.0, 0.2, 0.4], [0.0, 0.2, 0.4]) + ticks(2, [0.0] * 3, state="S")
    ctx = run(bundle_data(rows, sched_offcpu=offcpu, sched_stacks={0: ("x (libx.so)",)}))
    ctx.metrics["busy_threads_mean"] = 1.0
    sched.perf_scheduling(ctx)
    return ctx.metrics


def test_threads_started_during_the_trace_are_counted_with_their_lives():
    # GIVEN 40 threads started in 0.4 s, each living 2 ms, beside 2 the capture started with
    m = _births(0.002)
    window = 0.4  # the first switch-out to the last one's end
    assert m["threads_started_per_s"] == pytest.approx(40 / window, rel=0.02)
    assert m["threads_started_life_ms_p50"] == pytest.approx(2.0)
    # 40 x 2 ms of thread-time in 0.4 s: 0.2 threads against 1.0 busy
    assert m["busy_share_started_threads"] == pytest.approx(0.2, abs=0.01)


def test_the_waits_started_threads_end_are_theirs():
    # GIVEN the same, and thread 1's 0.3 s wait ended by one of them (a join), thread 2's
    # 0.1 s wait preempted and woken by one of them (not a wait for it)
    extra = pd.DataFrame({"t": [0.01, 0.02], "tid": [1, 2], "cpu": 0, "state": ["S", "R"],
                          "dur": [0.3, 0.1], "cpu_in": 0, "runq": float("nan"),
                          "waker": [105, 106], "stack_id": 0})  # fmt: skip
    m = _births(0.002, extra=extra)
    # 0.08 s of lives + 0.3 s of the join in 0.4 s: 0.95 threads against 1.0 busy
    assert m["busy_share_started_threads"] == pytest.approx(0.95, abs=0.01)


def test_threads_started_for_long_work_say_so_by_their_lives():
    # near miss: the same starts, each living 200 ms (the work itself, not its overhead)
    m = _births(0.2)
    assert m["threads_started_life_ms_p50"] == pytest.approx(200.0)
    assert m["busy_share_started_threads"] == 1.0  # 40 x 0.2 s in 0.59 s, at most 1


# --- the GIL -------------------------------------------------------------------------------


def test_gil_waiters_are_counted_per_tick_by_address():
    rows = ticks(1, [0, 0.1, 0.2], state="R")
    rows += ticks(2, [0, 0, 0], state="S", syscall=FUTEX, arg0="0x1800")  # inside _PyRuntime
    rows += ticks(3, [0, 0, 0], state="S", syscall=FUTEX, arg0="0x3000")  # another futex
    stacks = {0: ("run (a.py:1)",)}
    data = bundle_data(rows, [(t, 0.0, 0.25, 0) for t in (1, 2, 3)], stacks, system=GIL)
    m = run(data, threads.thread_states, threads.thread_metrics, gil.gil_waiters).metrics
    assert (m["gil_waiters_mean"], m["gil_waiters_max"]) == (1.0, 1)
    assert m["busy_share_gil"] == pytest.approx(0.2 / 0.6, abs=1e-4)
    # without the GIL's address, a Python target's GIL share is not measured
    no_gil = bundle_data(rows, [(t, 0.0, 0.25, 0) for t in (1, 2, 3)], stacks)
    m = run(no_gil, threads.thread_states, threads.thread_metrics, gil.gil_waiters).metrics
    assert m["busy_share_gil"] is None and "gil_waiters_mean" not in m


GIL_FOLDED = (
    "thread (5): pre;serve (app.py:1);tokenize (app.py:9) 6\n"
    "thread (6): infer;serve (app.py:1);predict (app.py:20) 2\n"
    "not a thread frame;x 9\n"
)


def test_gil_holders_from_py_spy_gil_samples():
    # GIVEN thread 6 calls the model at predict (app.py:20): a call structure was found
    ctx = context(bundle_data(gil_folded=GIL_FOLDED))
    call = ModelPath(("serve (app.py:1)", "predict (app.py:20)"), "framework", 1.0)
    ctx.structure = Structure(paths={6: [call]}, calls=[call])
    gil.gil_holders(ctx)
    m = ctx.metrics
    assert m["gil_held_samples"] == 8
    assert (m["gil_holder_top"], m["gil_holder_top_share"]) == ("pre (5)", 0.75)
    assert m["gil_holder_top_site"] == "tokenize (app.py:9)"
    assert m["gil_holder_preprocess_share"] == 0.75  # tokenize is preprocessing
    assert ctx.out.extra["gil_holders"] == [("pre (5)", 0.75), ("infer (6)", 0.25)]


def test_without_a_model_call_no_gil_holder_is_a_stage_by_its_name():
    # GIVEN the same GIL samples and no model call found: nothing to be before
    ctx = run(bundle_data(gil_folded=GIL_FOLDED), gil.gil_holders)
    # THEN `tokenize` holding the GIL is the service's Python work, not its preprocessing
    assert ctx.metrics["gil_holder_preprocess_share"] == 0.0
    assert ctx.metrics["gil_holder_top_site"] == "tokenize (app.py:9)"


# --- on-CPU and stages ---------------------------------------------------------------------


def test_perf_samples_join_python_stacks_and_take_the_kernel_s_category():
    # GIVEN 3 perf samples of thread 1 in sgemm under predict(), 1 in tokenize, and py-spy's
    # stack of thread 1 at those moments
    py = {
        0: ("serve (app.py:1)", "predict (app.py:5)"),
        1: ("serve (app.py:1)", "tokenize (app.py:9)"),
    }
    native = {
        0: ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)", "sgemm_kernel (libopenblas.so)"),
        1: ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)"),
    }  # fmt: skip
    samples = pd.DataFrame(
        {"t": [0.01, 0.02, 0.095, 0.15], "tid": [1] * 4, "stack_id": [0, 0, 0, 1]}
    )
    data = bundle_data(
        ticks(1, [0, 0.1, 0.2]),
        [(1, 0.0, 0.1, 0), (1, 0.1, 0.2, 1)],
        py,
        native_samples=samples,
        native_stacks=native,
        missing={},
    )
    ctx = run(data, threads.thread_states, oncpu.oncpu_samples, oncpu.oncpu_shares)
    m = ctx.metrics
    assert m["oncpu_source"] == "perf+py-spy" and m["oncpu_samples"] == 4
    assert m["oncpu_share_compute"] == 0.75 and m["oncpu_share_preprocess"] == 0.25
    assert m["oncpu_share_inference"] == 0.75 and m["oncpu_native_share"] == 0.75
    assert m["compute_top_function"] == "sgemm_kernel (libopenblas.so)"
    assert m["preprocess_top_function"] == "tokenize (app.py:9)"
    # the mixed stack: Python frames, then the native frames below the interpreter's last
    gemm = next(s for s in ctx.oncpu if s.category == "compute")
    assert gemm.stack == ("serve (app.py:1)", "predict (app.py:5)", "sgemm_kernel (libopenblas.so)")
    assert gemm.weight == 3.0
    # the join is sure for 2 of them: py-spy saw predict() again after them, not after 0.095
    assert gemm.sure == 2.0
    (root, *_), _w = ctx.out.flames["cpu"][0]
    assert ThreadFrame.parse(root) == ThreadFrame(1, "thread-1")


def test_kernel_shares_count_what_the_cpu_did_in_any_stage():
    # GIVEN preprocessing (by name) whose samples are a copy, a first touch of a fresh page
    # under it, and a matrix-vector product: a stage that moves memory
    py = {0: ("serve (app.py:1)", "preprocess (app.py:5)")}
    interp = ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)")
    fault = ("asm_exc_page_fault ([kernel.kallsyms])", "clear_page_erms ([kernel.kallsyms])")
    native = {
        0: (*interp, "__memmove_avx_unaligned_erms (libc.so.6)"),
        1: (*interp, "__memmove_avx_unaligned_erms (libc.so.6)", *fault),
        2: (*interp, "cblas_sgemv (libopenblas.so)", "sgemv_kernel_4x4 (libopenblas.so)"),
        3: (*interp, "sgemm_kernel_HASWELL (libopenblas.so)"),
    }
    samples = pd.DataFrame(
        {"t": [0.01, 0.02, 0.03, 0.04, 0.05], "tid": [1] * 5, "stack_id": [0, 1, 1, 2, 3]}
    )
    data = bundle_data(
        ticks(1, [0, 0.1, 0.2]), [(1, 0.0, 0.2, 0)], py,
        native_samples=samples, native_stacks=native, missing={},
    )  # fmt: skip
    m = run(data, threads.thread_states, oncpu.oncpu_samples, oncpu.oncpu_shares).metrics
    # THEN the stage holds them all, and the kernel shares say what they were: the faults
    # the allocator's, the copy and GEMV memory-bound (BLAS level 2), the GEMM compute
    assert m["oncpu_share_preprocess"] == 1.0
    assert (m["kernel_share_allocator"], m["kernel_share_memory"]) == (0.4, 0.4)
    assert m["kernel_share_compute"] == 0.2
    # the code the faults came from: the copy, the leaf-most frame outside the kernel
    assert m["memory_top_function"] == "__memmove_avx_unaligned_erms (libc.so.6)"


def test_model_time_in_frames_perf_could_not_name_names_their_library():
    # GIVEN perf samples of predict() whose native leaf is unnamed in a stripped library
    # (3 samples), and one in a named function no kernel pattern knows
    py = {0: ("serve (app.py:1)", "predict (app.py:5)")}
    interp = ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)")
    native = {
        0: (*interp, "[unknown] (onnxruntime_pybind11_state.so)"),
        1: (*interp, "RunKernel (libcustom.so)"),
    }
    samples = pd.DataFrame(
        {"t": [0.01, 0.02, 0.03, 0.04], "tid": [1] * 4, "stack_id": [0, 0, 0, 1]}
    )
    data = bundle_data(
        ticks(1, [0, 0.1, 0.2]), [(1, 0.0, 0.2, 0)], py,
        native_samples=samples, native_stacks=native, missing={},
    )  # fmt: skip
    m = run(data, threads.thread_states, oncpu.oncpu_samples, oncpu.oncpu_shares).metrics
    # THEN the model time is unplaced, and the library perf could not name is said
    assert m["oncpu_share_model"] == 1.0
    assert m["model_unnamed_library"] == "onnxruntime_pybind11_state.so"
    # a named leaf, or frames with no library at all, name no library
    assert oncpu.unnamed_library({"RunKernel (libcustom.so)": 3.0, "[unknown] (x.so)": 1.0}) == ""
    assert oncpu.unnamed_library({"[unknown] ([unknown])": 3.0}) == ""
    assert oncpu.unnamed_library({}) == ""


def test_a_thread_seen_waiting_for_work_but_running_a_text_kernel_had_left_its_wait():
    # GIVEN py-spy saw pool thread 1 in Queue.get at 0.0 and 0.1 (idle at both samples),
    # and perf saw it in unicodedata's NFKD at 0.05 (a whole request ran in between), and
    # in the kernel's futex wait at 0.06 (the wait itself)
    wait = ("run (pool.py:10)", "Queue.get (/usr/lib/python3.11/queue.py:171)")
    py = {0: wait}
    native = {
        0: ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)", "nfd_nfkd (unicodedata.cpython-311-x86_64-linux-gnu.so)"),
        1: ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)", "futex_wait ([kernel.kallsyms])"),
    }  # fmt: skip
    samples = pd.DataFrame({"t": [0.05, 0.06], "tid": [1, 1], "stack_id": [0, 1]})
    data = bundle_data(
        ticks(1, [0, 0.1, 0.2]),
        [(1, 0.0, 0.2, 0)],
        py,
        native_samples=samples,
        native_stacks=native,
        missing={},
    )
    ctx = run(data, threads.thread_states, oncpu.oncpu_samples, oncpu.oncpu_shares)
    by_leaf = {s.stack[-1]: s for s in ctx.oncpu}
    # THEN the NFKD sample keeps its native frames alone (its Python stack then is not known)
    # and counts as preprocessing by its kernel's name; no sure join
    nfkd = by_leaf["nfd_nfkd (unicodedata.cpython-311-x86_64-linux-gnu.so)"]
    assert not any("Queue.get" in f for f in nfkd.stack) and nfkd.sure == 0.0
    assert ctx.metrics["oncpu_share_preprocess"] == 0.5
    # near miss: on a CPU inside the wait itself, the Python stack stays
    futex = by_leaf["futex_wait ([kernel.kallsyms])"]
    assert futex.stack[:2] == wait
    # and without the rules (the plain join) both keep it
    plain = oncpu.perf_samples(data)
    assert all(st[:2] == wait for _, st, _, _ in plain)


# --- flame graphs --------------------------------------------------------------------------


def test_wall_and_waits_flames_are_rooted_at_their_thread():
    rows = ticks(1, [0, 0.1, 0.2], state="R")
    rows += ticks(2, [0, 0, 0], state="S", syscall=FUTEX, arg0="0xa")
    py = {0: ("run (a.py:1)",), 1: ("run (a.py:1)", "worker (a.py:5)")}
    data = bundle_data(rows, [(1, 0.0, 0.2, 0), (2, 0.0, 0.2, 1)], py, names={1: "main", 2: "w"})
    ctx = run(data, threads.thread_states, flames.wall_and_waits)
    wall = dict(ctx.out.flames["wall"])
    assert wall[("thread (1): main", "run (a.py:1)")] == pytest.approx(0.2)
    assert wall[("thread (2): w", "run (a.py:1)", "worker (a.py:5)")] == pytest.approx(0.2)
    waits = dict(ctx.out.flames["waits"])
    assert waits == {
        ("lock wait", "thread (2): w", "run (a.py:1)", "worker (a.py:5)"): pytest.approx(0.2)
    }


# --- hardware ------------------------------------------------------------------------------


def test_hardware_counters_and_false_sharing():
    stat = "1000,,cycles,1,100.00\n1500,,instructions,1,100.00\n<not supported>,,cache-misses,0,0\n"
    c2c = {
        "metric": "hitm",
        "summary": {"Load Operations": 200, "Load Local HITM": 30, "Load Remote HITM": 10},
        "lines": [
            {"address": "0x40", "hitm": 30, "accesses": [
                {"offset": "0x0", "tid": 1, "symbol": "inc_a", "records": 20},
                {"offset": "0x8", "tid": 2, "symbol": "inc_b", "records": 10}]},
            {"address": "0x80", "hitm": 10, "accesses": []},
            {"address": "0xc0", "hitm": 0},
        ],
    }  # fmt: skip
    ctx = run(
        bundle_data(perf_stat=stat, c2c=c2c), counters.false_sharing, counters.hardware_counters
    )
    m = ctx.metrics
    assert m["ipc"] == 1.5 and "cache_miss_ratio" not in m  # not counted: not a measurement
    assert m["c2c_lines_contended"] == 2 and m["c2c_hitm_load_share"] == 0.2
    assert (m["c2c_top_line_address"], m["c2c_top_line_hitm_share"]) == ("0x40", 0.75)
    assert (m["c2c_top_line_offsets"], m["c2c_top_line_threads"]) == (2, 2)
    assert m["c2c_top_line_symbols"] == "inc_a, inc_b"


# --- futex wait kinds ----------------------------------------------------------------------


def test_futex_waits_are_classified_by_address_and_leaf_frame():
    # GIVEN perf futex waits: thread 1 (Python) on the GIL, on a lock, in a queue get;
    # thread 9 (native) in a mutex and in a condition wait
    py = {
        0: ("run (a.py:1)", "handle (a.py:3)"),
        1: ("run (a.py:1)", "Queue.get (/usr/lib/python3.11/queue.py:171)"),
    }
    waits = futex_table([
        {"t": 0.0, "tid": 1, "uaddr": "0x1800", "dur": 0.01},
        {"t": 0.1, "tid": 1, "uaddr": "0xa", "dur": 0.01},
        {"t": 0.3, "tid": 1, "uaddr": "0xb", "dur": 0.01},
        {"t": 0.0, "tid": 9, "uaddr": "0xc", "dur": 0.01, "stack_id": 0},
        {"t": 0.1, "tid": 9, "uaddr": "0xd", "dur": 0.01, "stack_id": 1},
        {"t": 0.2, "tid": 9, "uaddr": "0xe", "dur": float("nan"), "stack_id": 0},  # never ended
    ])  # fmt: skip
    sched_stacks = {0: ("__lll_lock_wait (libc.so.6)",), 1: ("pthread_cond_wait (libc.so.6)",)}
    data = bundle_data([], [(1, 0.0, 0.2, 0), (1, 0.2, 0.4, 1)], py, system=GIL,
                       sched_futex=waits, sched_stacks=sched_stacks)  # fmt: skip
    fx = threads.futex_waits(data, FR)
    assert fx is not None
    assert fx["kind"].tolist() == ["gil", "lock", "condition", "lock", "condition"]


# --- the pipeline --------------------------------------------------------------------------


def test_every_step_writes_only_catalogue_metrics_and_the_rest_says_why(fixture_analysis):
    assert set(fixture_analysis.metrics) == set(METRICS)
    for name, value in fixture_analysis.metrics.items():
        assert (value is None) == (name in fixture_analysis.unmeasured), name


def test_the_pipeline_runs_steps_in_order_with_one_signature():
    seen: list[str] = []
    steps = tuple(lambda ctx, n=n: seen.append(n) for n in ("a", "b", "c"))
    a = analyse_data(bundle_data(), FR, steps)
    assert seen == ["a", "b", "c"]
    # nothing was written: every metric is unmeasured, with the missing collector's reason
    assert a.unmeasured["oncpu_share_compute"] == "perf unavailable: perf is not installed"
    assert a.unmeasured["window_s"] == "no data for it in this capture"
    assert all(callable(s) for s in STEPS) and len(set(STEPS)) == len(STEPS)


@pytest.fixture(scope="module")
def fixture_analysis():
    from diagnose.analyse import analyse
    from diagnose.bundle.reader import Bundle
    from tests.conftest import FIXTURES

    return analyse(Bundle.open(FIXTURES / "bundles" / "lock_contention"))


def test_top_functions_are_the_code_not_the_kernel_frames_under_it():
    # GIVEN model time sampled while its thread was in the kernel (a context switch)
    from diagnose.analyse import oncpu
    from diagnose.analyse.model import OnCpuSample
    from tests.unit.analysis import bundle_data, context

    ctx = context(bundle_data([], [(1, 0.0, 1.0, 0)], {0: ("handle (app.py:20)",)}))
    ctx.metrics["oncpu_source"] = "perf+py-spy"
    gemm = ("handle (app.py:20)", "sgemm_kernel_HASWELL (libopenblas.so)")
    switch = (*gemm, "finish_task_switch ([kernel.kallsyms])")
    ctx.oncpu = [OnCpuSample(1, gemm, 1.0, "compute"), OnCpuSample(1, switch, 2.0, "compute")]
    oncpu.oncpu_shares(ctx)
    # THEN the function named is the kernel's caller, the GEMM
    assert ctx.metrics["compute_top_function"] == "sgemm_kernel_HASWELL (libopenblas.so)"
    assert all("kallsyms" not in f for f, _ in ctx.out.oncpu["top_functions"]["compute"])


def test_a_fix_names_the_stage_s_code_not_the_gil_hand_over_it_burns_cpu_in():
    # GIVEN a tokeniser stage whose threads pass the GIL around: more of its samples fall in
    # the futex call of a hand-over (take_gil's condition wait) than in any one function
    from diagnose.analyse import oncpu
    from diagnose.analyse.model import OnCpuSample
    from tests.unit.analysis import bundle_data, context

    ctx = context(bundle_data([], [(1, 0.0, 1.0, 0)], {0: ("handle (app.py:20)",)}))
    ctx.metrics["oncpu_source"] = "perf+py-spy"
    stage = ("handle (app.py:20)", "Wordpiece.tokenize (tok.py:456)")
    handover = (*stage, "take_gil (libpython3.11.so)", "pthread_cond_timedwait (libc.so.6)",
                "__futex_abstimed_wait_common (libc.so.6)", "do_futex ([kernel.kallsyms])")  # fmt: skip
    lock = (*stage, "__lll_lock_wait (libc.so.6)")
    join = (*stage, "_PyUnicode_JoinArray (libpython3.11.so)")
    ctx.oncpu = [
        OnCpuSample(1, handover, 3.0, "preprocess"),
        OnCpuSample(1, lock, 1.0, "preprocess"),
        OnCpuSample(1, stage, 2.0, "preprocess"),
        OnCpuSample(1, join, 1.0, "preprocess"),
    ]
    oncpu.oncpu_shares(ctx)
    # THEN the function named is the code that waited, the tokeniser (3 + 1 + 2 samples)
    assert ctx.metrics["preprocess_top_function"] == "Wordpiece.tokenize (tok.py:456)"
    named = [f for f, _ in ctx.out.oncpu["top_functions"]["preprocess"]]
    assert named == ["Wordpiece.tokenize (tok.py:456)", "_PyUnicode_JoinArray (libpython3.11.so)"]
    # near miss: work in a libc function that is no wait is named
    ctx.oncpu = [OnCpuSample(1, (*stage, "__memmove_avx_unaligned (libc.so.6)"), 1.0, "preprocess")]
    oncpu.oncpu_shares(ctx)
    assert ctx.metrics["preprocess_top_function"] == "__memmove_avx_unaligned (libc.so.6)"


def test_an_analysis_leaves_the_shared_frame_rules_holding_none_of_its_stacks():
    # one FrameRules serves every analysis of a long-lived process (diagnose watch): the
    # stacks it cached for one capture would stay alive through every later one
    from diagnose.analyse import analyse
    from diagnose.analyse.frames import frame_rules
    from diagnose.bundle.reader import Bundle
    from tests.conftest import FIXTURES

    fr = frame_rules()
    analyse(Bundle.open(FIXTURES / "bundles" / "lock_contention"))
    assert fr.forget() == 0
    # near miss: categorising a stack outside an analysis does cache it
    fr.categorize(("main (app.py:1)", "sgemm_kernel (libopenblas.so)"))
    assert fr.forget() > 0


def test_starting_and_ending_threads_is_measured_apart_from_their_work():
    # GIVEN perf samples of a process: 3 in a started thread's work, 1 in clone (a thread
    # being started), 1 in exit (one ending), weighted, and one in a memory map that is no
    # thread's start (the allocator's mmap)
    interp = ("start (libpython3.11.so)", "_PyEval_EvalFrameDefault (libpython3.11.so)")
    syscall = (
        "entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])",
        "do_syscall_64 ([kernel.kallsyms])",
    )
    native = {
        0: (*interp, "sgemm_kernel (libopenblas.so)"),
        1: (*interp, "pthread_create@@GLIBC_2.34 (libc.so.6)", "__clone3 (libc.so.6)", *syscall,
            "__do_sys_clone3 ([kernel.kallsyms])", "kernel_clone ([kernel.kallsyms])",
            "copy_process ([kernel.kallsyms])"),
        2: ("start_thread (libc.so.6)", *syscall, "__x64_sys_exit ([kernel.kallsyms])",
            "do_exit ([kernel.kallsyms])", "exit_mm ([kernel.kallsyms])"),
        3: (*interp, "__mmap (libc.so.6)", *syscall, "do_mmap ([kernel.kallsyms])"),
    }  # fmt: skip
    samples = pd.DataFrame(
        {"t": [0.01, 0.02, 0.03, 0.04, 0.05, 0.06], "tid": [1, 1, 1, 2, 3, 1],
         "stack_id": [0, 0, 0, 1, 2, 3], "weight": [1.0, 1.0, 1.0, 2.0, 1.0, 2.0]}
    )  # fmt: skip
    data = bundle_data(native_samples=samples, native_stacks=native, missing={})
    m = run(data, sched.thread_lifecycle).metrics
    # THEN the start and the exit are the cost (3 of 8 weighted samples), not the work
    assert m["thread_lifecycle_cpu_share"] == 0.375


def test_no_native_samples_leave_the_lifecycle_share_unmeasured():
    assert "thread_lifecycle_cpu_share" not in run(bundle_data(), sched.thread_lifecycle).metrics
