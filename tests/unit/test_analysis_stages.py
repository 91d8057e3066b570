"""Stage attribution by call structure (diagnose/analyse/stages.py), on hand-built stacks.

Principle: where a sample sits relative to the model call decides its stage (before the
call in the handler: preprocessing; after it: postprocessing or serialisation; a thread
feeding the model's threads: preprocessing); names decide only where the structure cannot.
Each case has a near miss that the structure must NOT place.
"""

from __future__ import annotations

import pytest

from diagnose.analyse import stages
from diagnose.analyse.model import OnCpuSample
from diagnose.formats.stacks import Stack

from .analysis import FR, bundle_data, context

TORCH = "_call_impl (/venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1511)"
DUMPS = "dumps (/usr/lib/python3.11/json/__init__.py:231)"
PUT = "put (/usr/lib/python3.11/queue.py:140)"


def placed(samples: list[tuple[int, Stack, float]], intervals=(), stacks=None):  # type: ignore[no-untyped-def]
    """Run the stage step over on-CPU samples named by their frames: {stack: (category, how)}."""
    data = bundle_data([], intervals, stacks or {})
    ctx = context(data)
    ctx.oncpu = [OnCpuSample(t, st, w, FR.categorize(st)) for t, st, w in samples]
    stages.stages(ctx)
    return {(s.tid, s.stack): (s.category, s.how) for s in ctx.oncpu}, ctx


def test_before_the_model_call_is_preprocessing_after_it_postprocessing() -> None:
    # GIVEN a handler whose line 22 calls a torch module; plain-named code at line 20 and 25
    model = ("serve (app.py:90)", "handle (app.py:22)", TORCH)
    before = ("serve (app.py:90)", "handle (app.py:20)", "tidy (app.py:5)")
    after = ("serve (app.py:90)", "handle (app.py:25)", "shape_reply (app.py:40)")
    reply = ("serve (app.py:90)", "handle (app.py:26)", DUMPS)
    got, ctx = placed([(1, model, 1.0), (1, before, 2.0), (1, after, 0.5), (1, reply, 0.5)])
    # THEN the structure places each, whatever the names say
    assert got[(1, model)] == ("model", "structure")
    assert got[(1, before)] == ("preprocess", "structure")
    assert got[(1, after)] == ("postprocess", "structure")
    assert got[(1, reply)] == ("serialisation", "structure")
    assert ctx.metrics["model_call_threads"] == 1
    assert ctx.metrics["oncpu_share_placed"] == 1.0
    assert ctx.metrics["model_call_site"] == "handle (app.py:22)"


def test_threads_running_the_same_handler_share_its_model_call() -> None:
    # GIVEN thread 1 was seen calling the model; thread 2 runs the same handler and was only
    # seen cleaning (a pool thread whose model calls fell between samples); thread 3 runs
    # other code with the same plain function
    model = ("serve (app.py:90)", "handle (app.py:22)", TORCH)
    tidy = ("serve (app.py:90)", "handle (app.py:20)", "tidy (app.py:5)")
    elsewhere = ("cron (jobs.py:3)", "tidy (app.py:5)")
    got, ctx = placed([(1, model, 1.0), (2, tidy, 1.0), (3, elsewhere, 1.0)])
    # THEN thread 2's cleaning is before the model call in the same handler: preprocessing
    assert got[(2, tidy)] == ("preprocess", "structure")
    # near miss: thread 3 shares no frame with the handler: unexplained
    assert got[(3, elsewhere)] == ("other", "name")
    assert ctx.metrics["model_call_threads"] == 1
    assert ctx.metrics["oncpu_share_placed"] == round(2 / 3, 4)


ANYIO = "/venv/lib/python3.11/site-packages/anyio/_backends/_asyncio.py"


def test_the_serving_machinery_is_not_the_handler() -> None:
    # GIVEN a worker pool's loop (anyio) that takes its next job at line 1113 and runs the
    # handler at line 1124, which calls the model
    run = f"WorkerThread.run ({ANYIO}:1124)"
    model = (run, "handle (app.py:22)", TORCH)
    take = (f"WorkerThread.run ({ANYIO}:1110)", "bookkeeping (app.py:70)")
    before = (run, "handle (app.py:20)", "tidy (app.py:5)")
    got, _ = placed([(1, model, 1.0), (1, take, 1.0), (1, before, 1.0)])
    # THEN what the pool's loop does before running the handler is not preprocessing
    assert got[(1, take)] == ("other", "name")
    # near miss: the handler's own line before the call is
    assert got[(1, before)] == ("preprocess", "structure")


def test_a_thread_on_a_cpu_in_a_wait_frame_is_in_no_stage() -> None:
    model = ("serve (app.py:90)", "handle (app.py:22)", TORCH)
    waiting = (
        "serve (app.py:90)",
        "handle (app.py:20)",
        "Condition.wait (/usr/lib/python3.11/threading.py:327)",
    )
    got, _ = placed([(1, model, 1.0), (1, waiting, 1.0)])
    assert got[(1, waiting)] == ("other", "name")


GEMV = "sgemv_kernel_4x8 (libscipy_openblas64_.so)"
UNIDATA = "unicodedata_UCD_category (unicodedata.cpython-311-x86_64-linux-gnu.so)"


def test_a_kernel_joined_to_a_line_that_mostly_does_other_work_is_no_model_call() -> None:
    # GIVEN one GEMV sample joined to fold's line 29 (a stale join: the thread had just left
    # the model), where 9 other samples run unicodedata; and a real model line, all GEMV
    stale = ("handle (app.py:20)", "fold (text.py:29)", GEMV)
    work = ("handle (app.py:20)", "fold (text.py:29)", UNIDATA)
    loop = ("handle (app.py:20)", "fold (text.py:33)")
    real = ("handle (app.py:24)", "Encoder.__call__ (model.py:162)", GEMV)
    samples = [(1, stale, 1.0), (1, work, 9.0), (1, loop, 5.0), (1, real, 3.0)]
    got, ctx = placed(samples)
    # THEN fold's line 29 is not taken as a model call (its line 33 is not "after" it)...
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["Encoder.__call__ (model.py:162)"]  # type: ignore[union-attr]
    # ...and fold, called at handle's line 20, before the model call at line 24, is preprocessing
    assert got[(1, loop)] == ("preprocess", "structure")
    assert got[(1, real)] == ("memory", "structure")  # a GEMV: BLAS level 2, memory-bound
    # near miss: with the GEMV most of the line's time, the line is a model call
    got, ctx = placed([(1, stale, 6.0), (1, work, 4.0)])
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["fold (text.py:29)"]  # type: ignore[union-attr]


def test_a_framework_library_joined_to_a_line_that_mostly_does_other_work_is_no_model_call() -> (
    None
):
    # GIVEN an image resize whose line joined a libtorch frame twice (the thread had just left
    # the model call, at handle's line 71), its own resample samples 20; the real model call
    resize = ("handle (app.py:69)", "load_image (app.py:48)", "Image.resize (PIL/Image.py:2440)")
    stale = (*resize, "at::native::conv2d (libtorch_cpu.so)")
    work = (*resize, "_ImagingResampleHorizontal_8bpc (_imaging.so)")
    real = ("handle (app.py:71)", TORCH)
    got, ctx = placed([(1, stale, 2.0), (1, work, 20.0), (1, real, 4.0)])
    # THEN the resize is no model call: it runs before the model's line, preprocessing
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["handle (app.py:71)"]  # type: ignore[union-attr]
    assert got[(1, work)] == ("preprocess", "structure")
    # near miss: a line whose time is mostly the library's (a C extension driving torch)
    got, ctx = placed([(1, stale, 15.0), (1, work, 5.0)])
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["Image.resize (PIL/Image.py:2440)"]  # type: ignore[union-attr]


def test_jit_code_joined_to_a_preprocessing_line_is_the_models_time() -> None:
    # GIVEN convolution samples in code the runtime generated (no symbol: perf names the
    # region perf-PID.map), joined to a decoding line; that line's own samples. (Under a
    # frame named as a stage, "Image.resize", the name would keep it: a transform calling
    # torch is preprocessing.)
    decode = ("handle (app.py:69)", "load_item (app.py:48)")
    jit = (*decode, "[unknown] (perf-4242.map)")
    work = (*decode, "ImagingUnpackRGB (_imaging.so)")
    real = ("handle (app.py:71)", TORCH)
    got, _ = placed([(1, jit, 3.0), (1, work, 20.0), (1, real, 4.0)])
    # THEN the generated code's time is the model's, the decoding's stays preprocessing
    assert got[(1, jit)][0] == "model"
    assert got[(1, work)] == ("preprocess", "structure")


def test_near_miss_a_sample_sharing_no_frame_with_the_model_path_stays_other() -> None:
    model = ("serve (app.py:90)", "handle (app.py:22)", TORCH)
    housekeeping = ("monitor (app.py:200)", "collect_stats (app.py:210)")
    got, _ = placed([(1, model, 1.0), (1, housekeeping, 1.0)])
    assert got[(1, housekeeping)] == ("other", "name")


def test_an_endpoint_called_predict_is_not_the_model() -> None:
    # GIVEN an endpoint named predict whose line 12 cleans text and line 14 calls the model
    model = ("run (server.py:1)", "predict (app.py:14)", TORCH)
    clean = ("run (server.py:1)", "predict (app.py:12)", "handle (app.py:30)", "loop (app.py:33)")
    got, _ = placed([(1, model, 1.0), (1, clean, 3.0)])
    # THEN the cleaning under "predict" is preprocessing, not model time
    assert got[(1, clean)] == ("preprocess", "structure")
    # AND by name alone it would not be the model either (predict is not the leaf)
    assert FR.categorize(clean) == "other"


def test_a_stage_named_above_the_model_call_keeps_its_name() -> None:
    # a preprocess function that runs torch modules (torchvision transforms) is preprocessing
    st = ("handle (app.py:20)", "preprocess (app.py:10)", TORCH)
    got, _ = placed([(1, st, 1.0)])
    assert got[(1, st)] == ("preprocess", "name")


def test_a_thread_that_feeds_the_model_threads_is_preprocessing() -> None:
    # GIVEN thread 1 calls the model; thread 2 puts work on a queue and otherwise runs
    # plain code; thread 3 runs plain code and hands nothing over
    model = ("worker (app.py:60)", "infer_one (app.py:64)", TORCH)
    work2 = ("producer (app.py:40)", "tidy (app.py:5)")
    work3 = ("reporter (app.py:80)", "tidy (app.py:5)")
    stacks = {0: ("producer (app.py:44)", PUT), 1: work2, 2: work3, 3: model}
    iv = [(2, 0.0, 0.1, 1), (2, 0.1, 0.11, 0), (3, 0.0, 0.1, 2), (1, 0.0, 0.1, 3)]
    loop = (
        "producer (app.py:40)",
        "H11Protocol.data_received (/venv/lib/python3.11/site-packages/uvicorn/protocols/http/h11_impl.py:300)",
    )
    samples = [(1, model, 1.0), (2, work2, 1.0), (3, work3, 1.0), (2, loop, 1.0)]
    got, ctx = placed(samples, iv, stacks)
    assert got[(2, work2)] == ("preprocess", "structure")
    # near miss: the feeder's own serving machinery (its event loop) is not preprocessing
    assert got[(2, loop)] == ("other", "name")
    # near miss: no hand-off seen, not a feeder
    assert got[(3, work3)] == ("other", "name")
    assert ctx.metrics["feeder_threads"] == 1
    assert "queue.py" in ctx.structure.feeders[2]  # type: ignore[union-attr]


SEND = "_ConnectionBase.send_bytes (/usr/lib/python3.11/multiprocessing/connection.py:200)"


def test_a_process_that_feeds_a_sibling_model_is_its_preprocessing() -> None:
    # GIVEN a process that calls no model: thread 1 parses, thread 2 (a multiprocessing
    # queue's feeder thread) sends the results to another process
    parse: Stack = ("run (app.py:50)", "step (app.py:20)")
    feed: Stack = ("_feed (/usr/lib/python3.11/multiprocessing/queues.py:250)", SEND)
    stacks: dict[int, Stack] = {0: parse, 1: feed}
    iv = [(1, 0.0, 0.1, 0), (2, 0.0, 0.1, 1)]
    samples = [(1, parse, 3.0), (2, feed, 0.2)]
    got, ctx = placed(samples, iv, stacks)
    # THEN alone its parsing is no stage, and what it sends to is recorded
    assert got[(1, parse)] == ("other", "name")
    assert ctx.out.oncpu["structure"]["sends"] in feed
    # WHEN a sibling process calls the model (analyse/service.py), it is that model's feeder
    data = bundle_data([], iv, stacks)
    ctx = context(data)
    ctx.feeds = "its process sends work to PID 7, which calls the model"
    ctx.oncpu = [OnCpuSample(t, st, w, FR.categorize(st)) for t, st, w in samples]
    stages.stages(ctx)
    assert {(s.tid, s.category, s.how) for s in ctx.oncpu} >= {(1, "preprocess", "structure")}
    assert ctx.metrics["feeder_threads"] == 2
    # near miss: a process with a model call of its own keeps its threads' own structure
    model: Stack = ("worker (app.py:60)", "infer_one (app.py:64)", TORCH)
    stacks2: dict[int, Stack] = {0: parse, 2: model}
    iv2 = [(1, 0.0, 0.1, 0), (3, 0.0, 0.1, 2)]
    ctx = context(bundle_data([], iv2, stacks2))
    ctx.feeds = "its process sends work to PID 7, which calls the model"
    ctx.oncpu = [
        OnCpuSample(t, st, w, FR.categorize(st)) for t, st, w in [(1, parse, 3.0), (3, model, 1.0)]
    ]
    stages.stages(ctx)
    assert next(s for s in ctx.oncpu if s.tid == 1).category == "other"


def _same_line_run(order: str) -> tuple[dict[int, Stack], list[tuple[int, float, float, int]]]:
    """py-spy stacks of thread 1 through ``score(tidy(x))`` at handle line 20: "GM" runs
    tidy first, then the model; "MG" the other way round; repeated 20 times."""
    line = ("serve (app.py:90)", "handle (app.py:20)")
    stacks = {0: (*line, "tidy (app.py:5)"), 1: (*line, TORCH), 2: ("serve (app.py:91)",)}
    iv: list[tuple[int, float, float, int]] = []
    t = 0.0
    for _ in range(20):
        for k in order:
            iv.append((1, t, t + 0.01, 0 if k == "G" else 1))
            t += 0.01
        iv.append((1, t, t + 0.01, 2))  # leaves the line between requests
        t += 0.01
    return stacks, iv


def test_a_call_on_the_model_call_s_own_line_is_placed_by_the_order_it_ran_in() -> None:
    tidy = ("serve (app.py:90)", "handle (app.py:20)", "tidy (app.py:5)")
    model = ("serve (app.py:90)", "handle (app.py:20)", TORCH)
    stacks, iv = _same_line_run("GM")
    got, _ = placed([(1, model, 1.0), (1, tidy, 1.0)], iv, stacks)
    assert got[(1, tidy)] == ("preprocess", "structure")
    stacks, iv = _same_line_run("MG")
    got, _ = placed([(1, model, 1.0), (1, tidy, 1.0)], iv, stacks)
    assert got[(1, tidy)] == ("postprocess", "structure")


def _runs(tid: int, shapes: list[str], t0: float = 0.0) -> list[tuple[int, float, float, int]]:
    """py-spy intervals of thread ``tid`` through handle line 20 (stacks of _same_line_run),
    one run per shape ("GM": tidy then the model), the last interval of each run stretched
    to 0.2 s (the thread's next sample came late), each run between stacks elsewhere."""
    iv: list[tuple[int, float, float, int]] = [(tid, t0, t0 + 0.01, 2)]
    t = t0 + 0.01
    for shape in shapes:
        for i, k in enumerate(shape):
            d = 0.2 if i == len(shape) - 1 else 0.01
            iv.append((tid, t, t + d, 0 if k == "G" else 1))
            t += d
        iv.append((tid, t, t + 0.01, 2))
        t += 0.01
    return iv


def test_same_line_votes_are_runs_pooled_over_the_threads_at_the_line() -> None:
    # GIVEN 4 pool threads at score(tidy(x)): each has two runs that start in tidy and one
    # that ends in it, and the trailing runs' last interval stretches to the next sample
    tidy = ("serve (app.py:90)", "handle (app.py:20)", "tidy (app.py:5)")
    model = ("serve (app.py:90)", "handle (app.py:20)", TORCH)
    stacks, _ = _same_line_run("GM")
    iv = [x for tid in (1, 2, 3, 4) for x in _runs(tid, ["GM", "GM", "MG", "M"])]
    samples = [(tid, st, 1.0) for tid in (1, 2, 3, 4) for st in (model, tidy)]
    got, _ = placed(samples, iv, stacks)
    # THEN 8 runs against 4 place tidy before the model in every thread (by time the
    # stretched trailing intervals would outweigh them: 0.8 s against 0.08 s)
    assert {got[(tid, tidy)] for tid in (1, 2, 3, 4)} == {("preprocess", "structure")}
    # near miss: one thread alone, 2 runs against 1, is too few to say
    got, _ = placed([(1, model, 1.0), (1, tidy, 1.0)], _runs(1, ["GM", "GM", "MG"]), stacks)
    assert got[(1, tidy)] == ("other", "name")


@pytest.mark.parametrize("cut", ["by the recording's end", "by a gap in the samples"])
def test_same_line_runs_cut_mid_request_do_not_vote_at_the_cut(cut: str) -> None:
    # GIVEN 4 busy pool threads at score(tidy(x)), going from request to request without
    # leaving the line between two samples (a 10 Hz capture of a saturated service): each
    # seen entering the line in tidy, then its run cut in the next request's tidy, by the
    # recording's end or by py-spy's restart at a lower rate (0.3 s without samples)
    tidy = ("serve (app.py:90)", "handle (app.py:20)", "tidy (app.py:5)")
    model = ("serve (app.py:90)", "handle (app.py:20)", TORCH)
    stacks, _ = _same_line_run("GM")
    iv: list[tuple[int, float, float, int]] = []
    for tid in (1, 2, 3, 4):
        shape = "GMGMG" if cut == "by the recording's end" else "GMG_MGM"
        iv.append((tid, 0.0, 0.1, 2))
        t = 0.1
        for k in shape:
            if k == "_":
                t += 0.3
                continue
            iv.append((tid, t, t + 0.1, 0 if k == "G" else 1))
            t += 0.1
        if cut == "by a gap in the samples":
            iv.append((tid, t, t + 0.1, 2))
    samples = [(tid, st, 1.0) for tid in (1, 2, 3, 4) for st in (model, tidy)]
    got, _ = placed(samples, iv, stacks)
    # THEN only what was seen counts: each thread entered the line in tidy (4 votes "pre"),
    # and the run's cut end in tidy is no vote for "post" (counted, it made a 4:4 tie)
    assert {got[(tid, tidy)] for tid in (1, 2, 3, 4)} == {("preprocess", "structure")}


def test_near_miss_a_same_line_call_whose_order_is_not_dominant_keeps_its_name() -> None:
    tidy = ("serve (app.py:90)", "handle (app.py:20)", "tidy (app.py:5)")
    model = ("serve (app.py:90)", "handle (app.py:20)", TORCH)
    stacks, iv = _same_line_run("GMG")  # as much before as after: not measured
    got, _ = placed([(1, model, 1.0), (1, tidy, 1.0)], iv, stacks)
    assert got[(1, tidy)] == ("other", "name")
    # and without timestamps (no py-spy intervals) it is not placed either
    got, _ = placed([(1, model, 1.0), (1, tidy, 1.0)])
    assert got[(1, tidy)] == ("other", "name")


def test_a_native_gemm_is_a_model_call_with_perf() -> None:
    # GIVEN perf's mixed stack: handler line 22 -> numpy -> an OpenBLAS GEMM; line 20 plain code
    gemm = (
        "handle (app.py:22)",
        "PyArray_MatrixProduct2 (_multiarray_umath.cpython-311-x86_64-linux-gnu.so)",
        "sgemm_kernel_HASWELL (libscipy_openblas64_.so)",
    )
    tidy = ("handle (app.py:20)", "tidy (app.py:5)")
    got, _ = placed([(1, gemm, 3.0), (1, tidy, 1.0)])
    assert got[(1, gemm)] == ("compute", "structure")
    assert got[(1, tidy)] == ("preprocess", "structure")


def sure_placed(samples: list[tuple[int, Stack, float, float]]):  # type: ignore[no-untyped-def]
    """:func:`placed` for perf samples: (tid, stack, weight, of it the sure joins)."""
    data = bundle_data([], (), {})
    ctx = context(data)
    ctx.oncpu = [OnCpuSample(t, st, w, FR.categorize(st), sure=u) for t, st, w, u in samples]
    stages.stages(ctx)
    return {(s.tid, s.stack): (s.category, s.how) for s in ctx.oncpu}, ctx


def test_a_kernel_seen_only_after_the_thread_left_the_line_is_no_model_call() -> None:
    # GIVEN a service whose requests are shorter than py-spy's period: its threads are seen at
    # the hottest line of the cleaning (fold, line 31) before a whole model call, and 5 GEMV
    # samples join there; py-spy never saw the thread at that line again after any of them
    model = ("serve (app.py:90)", "handle (app.py:24)", "Ranker.__call__ (model.py:10)", GEMV)
    stale = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:31)", GEMV)
    work = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:31)", UNIDATA)
    later = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:33)")
    samples = [
        (1, model, 20.0, 15.0),
        (1, stale, 5.0, 0.0),
        (1, work, 4.0, 4.0),
        (1, later, 5.0, 5.0),
    ]
    got, ctx = sure_placed(samples)
    # THEN fold's line is no model call (and its line 33 is not "after" one): it is the
    # cleaning before the real model call at handle's line 24
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["Ranker.__call__ (model.py:10)"]  # type: ignore[union-attr]
    assert got[(1, later)] == ("preprocess", "structure")
    # near miss: the same samples with py-spy seeing the thread there after them: a model call
    samples[1] = (1, stale, 5.0, 5.0)
    _, ctx = sure_placed(samples)
    assert "fold (text.py:31)" in [mp.path[-1] for mp in ctx.structure.calls]  # type: ignore[union-attr]


def test_kernels_joined_to_the_cleaning_before_a_named_model_call_are_that_call_s() -> None:
    # GIVEN an async endpoint whose requests are shorter than py-spy's period: its line 24
    # calls a torch module, and 3 of the 5 sure samples at the cleaning's hottest line (fold,
    # line 31) joined the model's GEMM (tests/targets/async_predict.py, one capture in three)
    gemm = "mkl_blas_def_sgemm_kernel_0_zen (libtorch_cpu.so)"
    model = ("serve (app.py:90)", "handle (app.py:24)", TORCH)
    stale = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:31)", gemm)
    work = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:31)")
    later = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:33)")
    samples = [
        (1, model, 20.0, 8.0),
        (1, stale, 3.0, 3.0),
        (1, work, 2.0, 2.0),
        (1, later, 9.0, 4.0),
    ]
    got, ctx = sure_placed(samples)
    # THEN the torch call is the only model call, and fold's other lines are not "after" one
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["handle (app.py:24)"]  # type: ignore[union-attr]
    assert got[(1, later)] == ("preprocess", "structure")
    assert got[(1, stale)][0] == "compute"  # the sample itself: the kernel it ran
    # near miss: without the named call, the kernels at fold's line are a model call
    _, ctx = sure_placed(samples[1:])
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["fold (text.py:31)"]  # type: ignore[union-attr]


def test_a_kernel_call_seen_once_or_twice_is_no_model_call() -> None:
    # GIVEN 2 sure GEMV samples at fold's line 31, the line's only samples, and a model call
    # (by its kernel) at handle's line 24 with 40
    model = ("serve (app.py:90)", "handle (app.py:24)", GEMV)
    twice = ("serve (app.py:90)", "handle (app.py:20)", "fold (text.py:31)", GEMV)
    _, ctx = sure_placed([(1, model, 40.0, 40.0), (1, twice, 2.0, 2.0)])
    # THEN two samples do not make a model call
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["handle (app.py:24)"]  # type: ignore[union-attr]
    # near miss: three do (here also a tenth of all compute-kernel time)
    _, ctx = sure_placed([(1, model, 20.0, 20.0), (1, twice, 3.0, 3.0)])
    assert len(ctx.structure.calls) == 2  # type: ignore[union-attr]
    # near miss: three that are under a tenth of the kernel time are not
    _, ctx = sure_placed([(1, model, 40.0, 40.0), (1, twice, 3.0, 3.0)])
    assert len(ctx.structure.calls) == 1  # type: ignore[union-attr]


def test_the_out_structure_survives_the_shares_step() -> None:
    from diagnose.analyse import oncpu

    model = ("serve (app.py:90)", "handle (app.py:22)", TORCH)
    _, ctx = placed([(1, model, 1.0)])
    ctx.metrics["oncpu_source"] = "perf"
    oncpu.oncpu_shares(ctx)
    assert ctx.out.oncpu["structure"]["model_calls"] == [("handle (app.py:22)", 1.0)]
    assert ctx.metrics["oncpu_share_model"] == 1.0


def test_the_entry_method_of_a_model_class_is_the_model_call() -> None:
    # GIVEN the zoo's textclean handler (fastapi_textclean, measured): text cleaning at
    # handle's line 20, then a plain-NumPy model, NumpyModel.__call__, at line 21 whose
    # small GEMV the joins rarely catch (most of its time is NumPy's Python-level work)
    clean = ("predict (app.py:34)", "handle (app.py:20)", "prepare (textwork.py:43)",
             "fold (textwork.py:29)", UNIDATA)  # fmt: skip
    model = ("predict (app.py:34)", "handle (app.py:21)",
             "NumpyModel.__call__ (zoolib/__init__.py:162)")  # fmt: skip
    got, ctx = placed([(1, clean, 8.0), (1, model, 1.0)])
    # THEN the class's call is the model call, and the cleaning before it is preprocessing
    paths = [mp.path[-1] for mp in ctx.structure.calls]  # type: ignore[union-attr]
    assert paths == ["handle (app.py:21)"]
    assert got[(1, clean)] == ("preprocess", "structure")
    assert got[(1, model)] == ("model", "structure")
    # near miss: a function merely named like a model's method (no *Model class) is not
    helper = ("predict (app.py:34)", "handle (app.py:21)", "score.__call__ (app.py:50)")
    got, ctx = placed([(1, clean, 8.0), (1, helper, 1.0)])
    assert ctx.structure.calls == []  # type: ignore[union-attr]
    assert got[(1, clean)][1] == "name"


def placed_with_source(samples, intervals, stacks, calls):  # type: ignore[no-untyped-def]
    """:func:`placed`, with the line calls the capture read (python/calls.json)."""
    data = bundle_data([], intervals, stacks, py_line_calls=calls)
    ctx = context(data)
    ctx.oncpu = [OnCpuSample(t, st, w, FR.categorize(st)) for t, st, w in samples]
    stages.stages(ctx)
    return {(s.tid, s.stack): (s.category, s.how) for s in ctx.oncpu}, ctx


SCORE = "score (/srv/app.py:30)"
LINE = ("serve (/srv/app.py:90)", "handle (/srv/app.py:38)")


@pytest.mark.parametrize(
    ("calls", "order"),
    [
        # return {"queue": int(score(clean(t.text))) % 7}: clean runs before score (its
        # frame is "prepare": clean is an alias, so the line's other calls decide)
        ([("clean", ""), ("score", ""), ("int", "builtin")], "pre"),
        # return fmt(score(x)): fmt runs after it
        ([("score", ""), ("fmt", "")], "post"),
        # the callee named on the line: its own call decides, whatever else is there
        ([("prepare", ""), ("score", ""), ("fmt", "")], "pre"),
    ],
)
def test_a_call_on_the_model_call_s_line_is_placed_by_the_line_s_source(calls, order) -> None:
    # GIVEN py-spy runs that vote the other way (the thread goes from one request's model
    # call into the next one's cleaning without a sample outside the line: 10 Hz on a
    # saturated service), and the line's calls read from its source
    g = (*LINE, "prepare (/srv/textwork.py:12)")
    m = (*LINE, SCORE, TORCH)
    stacks = {0: g, 1: m, 2: ("serve (/srv/app.py:91)",)}
    iv = [x for tid in (1, 2, 3, 4) for x in _runs(tid, ["MG", "MG", "MG"])]
    samples = [(tid, st, 1.0) for tid in (1, 2, 3, 4) for st in (m, g)]
    by_votes, _ = placed(samples, iv, stacks)
    got, ctx = placed_with_source(samples, iv, stacks, {"/srv/app.py:38": calls})
    # THEN the source places it, in every thread
    want = "preprocess" if order == "pre" else "postprocess"
    assert {got[(tid, g)] for tid in (1, 2, 3, 4)} == {(want, "structure")}
    assert ctx.out.oncpu["structure"]["same_line_by_source"] == [
        {"line": LINE[-1], "call": "prepare", "order": order}
    ]
    # and without the source, the votes would have said "post"
    assert by_votes[(1, g)] == ("postprocess", "structure")


@pytest.mark.parametrize(
    "calls",
    [
        [("clean", ""), ("score", ""), ("fmt", "")],  # other calls on both sides
        [("score", "")],  # nothing else on the line that runs Python (a property? a dunder?)
        [("clean", ""), ("int", "builtin")],  # the model's call is not found
        [],  # the file was not read
    ],
)
def test_near_miss_a_line_whose_source_does_not_say_is_left_to_the_samples(calls) -> None:
    g = (*LINE, "prepare (/srv/textwork.py:12)")
    m = (*LINE, SCORE, TORCH)
    stacks = {0: g, 1: m, 2: ("serve (/srv/app.py:91)",)}
    iv = [x for tid in (1, 2, 3, 4) for x in _runs(tid, ["MG", "MG", "MG"])]
    samples = [(tid, st, 1.0) for tid in (1, 2, 3, 4) for st in (m, g)]
    got, ctx = placed_with_source(samples, iv, stacks, {"/srv/app.py:38": calls})
    assert got[(1, g)] == ("postprocess", "structure")  # the votes' order
    assert ctx.out.oncpu["structure"]["same_line_by_source"] == []


def test_a_model_object_called_on_the_line_is_found_as_its_only_other_call() -> None:
    # return shape_reply(self.model(tidy(x))): the model's frame is _call_impl, not
    # "model"; the line's other two calls are the functions seen called there
    pre = (*LINE, "tidy (/srv/app.py:50)")
    post = (*LINE, "shape_reply (/srv/app.py:60)")
    m = (*LINE, TORCH)
    stacks = {0: pre, 1: m, 2: post, 3: ("serve (/srv/app.py:91)",)}
    calls = [("tidy", ""), ("model", ""), ("shape_reply", "")]
    samples = [(1, st, 1.0) for st in (pre, m, post)]
    got, _ = placed_with_source(samples, [(1, 0.0, 0.1, 3)], stacks, {"/srv/app.py:38": calls})
    assert got[(1, pre)] == ("preprocess", "structure")
    assert got[(1, post)] == ("postprocess", "structure")
    # near miss: two calls on the line that could be the model's: not placed
    calls = [("tidy", ""), ("model", ""), ("cache", ""), ("shape_reply", "")]
    got, _ = placed_with_source(samples, [(1, 0.0, 0.1, 3)], stacks, {"/srv/app.py:38": calls})
    assert got[(1, pre)] == ("other", "name")


ENTRY = ("_run_module_as_main (<frozen runpy>:198)", "serve (/srv/app.py:90)")
ROUTING = "/venv/lib/python3.11/site-packages/fastapi/routing.py"
CLEAN = (*ENTRY, f"run_endpoint_function ({ROUTING}:381)", "moderate (/srv/app.py:31)",
         "handle (/srv/app.py:20)", "prepare (/srv/textwork.py:43)", "fold (/srv/textwork.py:29)")  # fmt: skip
NUMPY_MODEL = "NumpyModel.__call__ (/srv/zoolib.py:162)"
#: the model call as py-spy read it: the coroutine above was unlinked as it returned
CUT = (f"run_endpoint_function ({ROUTING}:380)", "moderate (/srv/app.py:31)",
       "handle (/srv/app.py:21)", NUMPY_MODEL)  # fmt: skip
#: ... and read with the callers' memory reused by the response code that ran after it
SERIALIZE = (*ENTRY, f"serialize_response ({ROUTING}:358)",
             "serialize_json (/venv/lib/python3.11/site-packages/fastapi/_compat/v2.py:231)")  # fmt: skip
TORN = (*SERIALIZE[len(ENTRY) :], NUMPY_MODEL)
MODEL_LINE = {"/srv/app.py:21": [("model", ""), ("len", "callback")]}


def test_a_model_call_seen_only_in_stacks_cut_short_is_compared_from_where_they_start() -> None:
    # GIVEN fastapi_async_textclean as measured (2026-12-04, 2 captures of 3 judged unknown):
    # the event loop cleans text at handle's line 20, then calls a small NumPy model at line
    # 21; py-spy reads its frames from the leaf up while it runs, and saw the model call
    # only in stacks that end early (the root frame's line read late: 380, not 381)
    samples = [(1, CLEAN, 8.0), (1, CUT, 1.0), (1, SERIALIZE, 0.5), (1, TORN, 1.5)]
    got, ctx = placed_with_source(samples, [], {}, MODEL_LINE)
    # THEN the cut path is the model call, compared from where it starts: the cleaning is
    # before it in the same handler
    assert got[(1, CLEAN)] == ("preprocess", "structure")
    assert got[(1, CUT)] == ("model", "structure")
    # near miss: the torn stack through an installed package (its line's source is not
    # read) is no model call for the serialisation it shows
    assert got[(1, SERIALIZE)] != ("model", "structure")
    assert [mp.cut for mp in ctx.structure.calls] == [False, True]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "calls",
    [
        {},  # the calling line's source was not read
        {"/srv/app.py:21": [("len", "builtin")]},  # it calls builtins only
    ],
)
def test_near_miss_a_cut_path_the_source_does_not_confirm_is_compared_as_it_is(calls) -> None:
    got, ctx = placed_with_source([(1, CLEAN, 8.0), (1, CUT, 1.0)], [], {}, calls)
    assert got[(1, CLEAN)] == ("other", "name")
    assert [mp.cut for mp in ctx.structure.calls] == [False]  # type: ignore[union-attr]


def test_a_path_starting_at_its_thread_s_entry_is_not_cut() -> None:
    # GIVEN the same model call seen whole (from the thread's entry), and a second thread
    # whose stacks all start inside the handler (a thread a C extension started there)
    whole = (*ENTRY, *CUT[:-1], NUMPY_MODEL)
    _, ctx = placed_with_source(
        [(1, CLEAN, 8.0), (1, whole, 1.0), (2, CUT, 1.0)], [], {}, MODEL_LINE
    )
    # THEN neither is cut: each starts where its thread's stacks start
    assert stages.entries(ctx.oncpu) == {1: ("_run_module_as_main", "<frozen runpy>"),
                                         2: ("run_endpoint_function", ROUTING)}  # fmt: skip
    assert {mp.cut for mp in ctx.structure.calls} == {False}  # type: ignore[union-attr]


#: a stdin consumer's loop (blind batch 15's s05): line 126 pulls featurised batches through a
#: generator, line 127 calls the torch model
LOOP = ("<module> (/srv/svc.py:140)", "main (/srv/svc.py:126)", "stamped (/srv/svc.py:110)",
        "featurise_batch (/srv/svc.py:48)", "<genexpr> (/srv/svc.py:48)",
        "featurise (/srv/svc.py:30)")  # fmt: skip
FORWARD = "Scorer.forward (/srv/svc.py:58)"
REAL = ("<module> (/srv/svc.py:140)", "main (/srv/svc.py:127)", TORCH, FORWARD, TORCH)
#: forward's frames read, then callers the thread had by then gone back to (py-spy reads a
#: running thread leaf first)
PHANTOM = (*LOOP[:4], FORWARD, TORCH)
SOURCE = {
    "/srv/svc.py:126": [],
    "/srv/svc.py:110": [("featurise_batch", "")],
    "/srv/svc.py:48": [("zip", "builtin")],  # zip(*(featurise(l) for l in lines))
    "/srv/svc.py:127": [("from_numpy", ""), ("model", "")],
    "/srv/svc.py:58": [("net", ""), ("softmax", "")],
}


def test_a_model_path_through_a_line_that_cannot_call_its_next_frame_is_a_torn_read() -> None:
    # GIVEN the featurising loop (90% of the thread), the model call at line 127 (21
    # samples) and a torn read joining forward to line 48, which calls only a builtin
    samples = [(1, LOOP, 90.0), (1, REAL, 21.0), (1, PHANTOM, 2.0)]
    got, ctx = placed_with_source(samples, [], {}, SOURCE)
    # THEN the torn path is no model call: the featurising runs before the model's line
    assert [mp.path[-1] for mp in ctx.structure.calls] == ["main (/srv/svc.py:127)"]  # type: ignore[union-attr]
    assert got[(1, LOOP)] == ("preprocess", "structure")
    assert ctx.metrics["model_call_site"] == "main (/srv/svc.py:127)"


@pytest.mark.parametrize(
    "line48",
    [
        [("zip", "builtin"), ("score", "")],  # the line calls a function: it may reach forward
        [("map", "callback")],  # a builtin given a function runs it
    ],
)
def test_near_miss_a_line_that_can_call_its_next_frame_is_no_torn_read(line48) -> None:
    samples = [(1, LOOP, 90.0), (1, REAL, 21.0), (1, PHANTOM, 2.0)]
    _, ctx = placed_with_source(samples, [], {}, {**SOURCE, "/srv/svc.py:48": line48})
    assert len(ctx.structure.paths[1]) == 2  # type: ignore[union-attr]


def test_near_miss_a_torn_path_alone_is_kept() -> None:
    # one line's calls may be misread: without an intact path as heavy, nothing is dropped
    _, ctx = placed_with_source([(1, LOOP, 90.0), (1, PHANTOM, 2.0)], [], {}, SOURCE)
    assert [mp.path[-1] for mp in ctx.structure.calls] == [FORWARD]  # type: ignore[union-attr]
