"""Stages by call structure: where each on-CPU sample sits relative to the model call.

Names say little about plain code (a cleaning loop in a function called ``handle``), and
can mislead (an endpoint called ``predict``). The structure of the calls says more:

1. **The model call.** In each thread, a stack that reaches a model framework's frame
   (onnxruntime's run, a torch module's call, a classical model's predict, or the entry
   method of a class named ``*Model``: the "model" category's ``match`` in frames.toml)
   or a native compute kernel (a GEMM, from perf) calls the model. The Python
   frames from the root to the frame that makes the call (at the line of the call) are that
   thread's *model path*. Samples inside the call are the model's (their kernel category, or
   ``model``), unless a frame above the call names a stage (a ``preprocess`` function that
   calls torchvision's transform modules is still preprocessing).
2. **Before or after it.** Every other sample of a thread with model paths is compared with
   them frame by frame from the root: where it leaves a model path in the same function at
   an earlier line, it ran before the model call (preprocessing); at a later line, after it
   (postprocessing, or serialisation where a frame names it). A call made on the model
   call's own line (``score(clean(text))``) is placed by the line's source where the
   capture could read it (Python runs a call's arguments before the call:
   collect/linecalls.py), else by the order it ran in: the Python
   stacks are timestamped, so whether that call ran when the thread came to the line (before
   the model) or as it left it (after) is measured; where neither order dominates, the sample
   keeps its name's category.
3. **Feeding threads.** A thread that never calls the model but hands work to the threads
   that do (a queue put, an executor submit, a thread-pool run: ``[structure] handoff``; or,
   measured by perf, it woke their waits for work) is a preprocessing stage: its samples are
   preprocessing, unless they name serialisation. So is every thread of a process that
   calls no model but sends work to a sibling process that does (``ctx.feeds``, decided
   over the service's processes: analyse/service.py).

Names decide only where the structure cannot (a thread that neither calls the model nor
feeds one, a sample that shares no frame with a model path). What stays "other" is shown in
every report as the unexplained share.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from diagnose.analyse.frames import FrameRules, frame_line, is_native_frame, split_frame
from diagnose.analyse.model import Context, ModelPath, OnCpuSample, Structure, most_common, rounded
from diagnose.formats.stacks import Stack

#: a gap in a thread's Python stacks longer than this ends a run of stacks through one line
SEGMENT_GAP_S = 0.05
#: how much one order must outweigh the other to place calls made on the model call's line
ORDER_MARGIN = 2.0
#: ...with at least this many runs (requests seen) voting for it
ORDER_MIN_VOTES = 3
#: perf wakeups of the model threads' waits for work that make a thread their feeder
FEEDER_WAKES = 3
#: the share of a line's on-CPU time in compute kernels that makes it a model call found by
#: its kernel (below it, the kernel samples were joined to a line the thread had just left)
KERNEL_LINE_SHARE = 0.5
#: ...and the share of all compute-kernel time it must hold: a thread that serves requests
#: shorter than py-spy's period is seen at its hottest line before and after a whole model
#: call, and one or two samples of that call join there
KERNEL_PATH_SHARE = 0.1
#: ...and at least this many perf samples (sure joins): one or two are as likely stale
KERNEL_PATH_MIN = 3.0


def stages(ctx: Context) -> None:
    """Step: place the on-CPU samples by call structure (see the module doc)."""
    if not ctx.oncpu:
        return
    frames = ctx.frames
    paths = model_paths(ctx.oncpu, frames, ctx.data.py_line_calls)
    structure = Structure(paths=paths, calls=shared_calls(paths))
    structure.feeders = feeders(ctx, structure)
    at_lines = samples_at_lines(ctx, structure)
    structure.same_line = same_line_order(ctx, structure, at_lines)
    structure.by_source = source_orders(ctx, structure, at_lines)
    ctx.structure = structure
    ctx.oncpu = [place_sample(s, structure, frames) for s in ctx.oncpu]
    _metrics(ctx, structure)


# --- 1. the model call ---------------------------------------------------------------------


def model_paths(
    samples: list[OnCpuSample],
    frames: FrameRules,
    line_calls: dict[str, list[tuple[str, str]]] | None = None,
) -> dict[int, list[ModelPath]]:
    """Per thread, the Python paths that call the model, heaviest first.

    py-spy reads a running thread's frames one by one, from the leaf up (``--nonblocking``):
    a frame can be read after its caller returned, and the stack then ends early (a
    coroutine's frame is unlinked from its caller as it returns) or goes on in the code that
    ran later (the caller's memory reused). A model call short against the time such a read
    takes (a small NumPy model at the end of each request, on a loaded host) can be seen
    only in such stacks. A path that does not start at its thread's entry (:func:`entries`)
    is compared from where it starts (:func:`anchored`) where the source of its calling line
    (``line_calls``: python/calls.json) confirms the call (:func:`_cut`); otherwise as it is,
    sharing no frame with the stacks that start at the entry.

    A call found in native frames alone (a GEMM, or a framework's library such as libtorch,
    under a Python line) rests on joining perf's sample to py-spy's stack of the same
    moment, and a short call (a small GEMV) can be joined to the line the thread had just
    left. Such a path is kept only where
    it is the line's work: at least KERNEL_LINE_SHARE of all the on-CPU time seen at that
    exact line (all threads: the same code) is in compute kernels, counting only the sure
    joins (py-spy saw the thread at that line again after the sample: a thread at 18 Hz
    runs a whole short call between two samples); it holds KERNEL_PATH_SHARE of all the
    model-kernel time (compute kernels, and the memory-bound ones models run: a GEMV) and
    KERNEL_PATH_MIN samples; and the line is not a wait (a frame
    that waits for work or a lock calls no kernel: that join was stale)."""
    acc: dict[int, dict[tuple[Stack, str, str], float]] = defaultdict(lambda: defaultdict(float))
    at_line: dict[Stack, float] = defaultdict(float)
    kernel_at: dict[Stack, float] = defaultdict(float)
    compute = 0.0
    for s in samples:
        py = tuple(f for f in s.stack if not is_native_frame(f))
        at_line[py] += s.sure_weight
        if s.category == "compute" or (s.category == "memory" and frames.is_model_kernel(s.stack)):
            compute += s.sure_weight
        call = frames.model_call(s.stack)
        if call is None:
            continue
        path = tuple(f for f in s.stack[: call[0]] if not is_native_frame(f))
        if not path:
            continue
        if _by_joined_frame(call[1], s.stack[call[0]]):
            if frames.wait_kind(path[-1]) is not None:
                continue
            kernel_at[path] += s.sure_weight
        acc[s.tid][(path, call[1], s.stack[call[0]])] += s.weight
    entry = entries(samples)
    out: dict[int, list[ModelPath]] = {}
    for tid, found in acc.items():
        merged: dict[tuple[Stack, str], tuple[float, str]] = {}
        for (path, how, callee), w in most_common(found):
            k = kernel_at[path]
            if _by_joined_frame(how, callee) and (
                k < KERNEL_PATH_MIN
                or k < KERNEL_LINE_SHARE * at_line[path]
                or (how == "kernel" and k < KERNEL_PATH_SHARE * compute)
            ):
                continue
            old = merged.get((path, how))
            merged[(path, how)] = (w + (old[0] if old else 0.0), old[1] if old else callee)
        found_paths = [
            ModelPath(p, how, w, callee, _cut(p, entry.get(tid), line_calls or {}))
            for (p, how), (w, callee) in sorted(merged.items(), key=lambda kv: -kv[1][0])
        ]
        found_paths = _without_stale_kernels(found_paths, frames)
        found_paths = _without_torn(found_paths, line_calls or {})
        if found_paths:
            out[tid] = found_paths
    return out


def _without_stale_kernels(paths: list[ModelPath], frames: FrameRules) -> list[ModelPath]:
    """Drop a path found by a joined native frame alone that runs before or after a model
    framework's call of the same thread, no heavier than it: kernels joined inside the
    code around a named model call are that call's, joined late (a thread whose requests
    are shorter than py-spy's period is seen at its hottest line of preprocessing before
    and after whole model calls), and such a path would place that code after itself."""
    named = [mp for mp in paths if not _by_joined_frame(mp.found_by, mp.callee)]
    if not named:
        return paths
    return [
        mp
        for mp in paths
        if not _by_joined_frame(mp.found_by, mp.callee)
        or not any(
            big.weight >= mp.weight and relation(mp.path, big.path, frames)[0] in ("pre", "post")
            for big in named
        )
    ]


def _without_torn(
    paths: list[ModelPath], line_calls: dict[str, list[tuple[str, str]]]
) -> list[ModelPath]:
    """Drop a path that a torn read made, where the thread has an intact one as heavy: a
    stack py-spy read while the frames changed under it (the model's frames read, then a
    caller the thread had by then gone on to) joins frames no call links. A torn path is
    kept where no intact one is as heavy: one line's calls may be misread."""
    intact = [mp for mp in paths if not _torn(mp, line_calls)]
    if len(intact) == len(paths) or not intact:
        return paths
    return [mp for mp in paths if mp in intact or not any(i.weight >= mp.weight for i in intact)]


def _torn(mp: ModelPath, line_calls: dict[str, list[tuple[str, str]]]) -> bool:
    """Whether one of the path's lines cannot call the frame below it: the line's source was
    read and calls only builtins given no function (``zip(*rows)``, ``len(x)``), which run
    no Python frame of their own: such a line can still enter a generator expression or
    comprehension (``<genexpr>``) or a protocol method (``__iter__``, ``__getitem__``),
    not a plain function."""
    frames = [*mp.path, mp.callee] if mp.callee and not is_native_frame(mp.callee) else mp.path
    for caller, callee in pairwise(frames):
        calls = line_calls.get(_line_key(caller))
        if not calls or any(kind != "builtin" for _, kind in calls):
            continue
        name = split_frame(callee)[0].rpartition(".")[2]
        if not (name.startswith("<") or (name.startswith("__") and name.endswith("__"))):
            return True
    return False


def _by_joined_frame(found_by: str, callee: str) -> bool:
    """Was the call found by a native frame, which rests on joining perf's sample to py-spy's
    stack of that moment (a kernel, or a framework's library), not by a Python frame?"""
    return found_by == "kernel" or is_native_frame(callee)


def entries(samples: list[OnCpuSample]) -> dict[int, tuple[str, str]]:
    """Each thread's entry: the function (and file) most of its Python stacks start in, by
    on-CPU time (``Thread._bootstrap``, the main module's runner)."""
    acc: dict[int, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    for s in samples:
        root = next((f for f in s.stack if not is_native_frame(f)), "")
        if root:
            acc[s.tid][split_frame(root)] += s.weight
    return {tid: most_common(found, 1)[0][0] for tid, found in acc.items()}


def _cut(
    path: Stack, entry: tuple[str, str] | None, line_calls: dict[str, list[tuple[str, str]]]
) -> bool:
    """Whether ``path`` is one cut short, to compare from where it starts: it does not
    start at its thread's entry, and the source of its calling line was read and makes a
    call that runs Python frames or native code (not a builtin's). The capture reads only
    the service's own files: a path whose caller part is an installed package's (the
    response code that ran after the model, read in its callers' place) is not one."""
    if split_frame(path[0]) == entry:
        return False
    return any(kind == "" for _, kind in line_calls.get(_line_key(path[-1]), []))


def anchored(mp: ModelPath, stack: Stack) -> Stack:
    """The model path as ``stack`` would show it: the path itself, or for a cut one, the
    frames of ``stack`` down to where it enters the path's first function, then the rest of
    the path (the first frame's line is ``stack``'s: it was read as the stack was cut). A
    stack that never enters that function gets the path unchanged (no frame shared)."""
    p = mp.path
    if not mp.cut:
        return p
    first = split_frame(p[0])
    best: Stack = p
    shared = -1
    for j, frame in enumerate(stack):
        if split_frame(frame) != first:
            continue
        if len(p) == 1:
            return stack[:j] + p
        n = _shared(stack[j + 1 :], p[1:])
        if n > shared:
            best, shared = stack[: j + 1] + p[1:], n
    return best


def _shared(a: Stack, b: Stack) -> int:
    """How many frames two stacks share from the root."""
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def shared_calls(paths: dict[int, list[ModelPath]]) -> list[ModelPath]:
    """The model paths of all threads, merged (threads that run the same handler call the
    model at the same place), heaviest first."""
    merged: dict[tuple[Stack, str], ModelPath] = {}
    for found in paths.values():
        for mp in found:
            old = merged.get((mp.path, mp.found_by))
            merged[(mp.path, mp.found_by)] = (
                mp if old is None else replace(old, weight=old.weight + mp.weight)
            )
    return sorted(merged.values(), key=lambda mp: -mp.weight)


# --- 2. before or after it -------------------------------------------------------------------


def _same_function(a: str, b: str) -> bool:
    return split_frame(a) == split_frame(b)


def relation(py: Stack, path: Stack, frames: FrameRules | None = None) -> tuple[str, int]:
    """How a stack's Python frames ``py`` relate to one model path: ("pre" | "post", depth)
    where they leave it in the same function at another line; ("model", depth) where they
    are the path itself (the call's own line); ("line", depth) where they go on from a frame
    of the path into another call made on the same line; ("", 0) where they share no frame,
    or part where the serving machinery does (``frames.is_serving``: a worker pool's loop is
    not the handler). ``depth`` is how many frames they share: the deepest relation is the
    most specific."""
    k = _shared(py, path)
    if k == len(path) and k == len(py):
        return "model", k
    if frames is not None and k < len(path) and frames.is_serving(path[k]):
        return "", 0
    same_function = k < len(py) and k < len(path) and _same_function(py[k], path[k])
    dispatching = frames is not None and 0 < k <= len(path) and frames.is_serving(path[k - 1])
    if dispatching and not same_function:  # another call on a dispatching line: the server's
        return "", 0
    if same_function:
        a, b = frame_line(py[k]), frame_line(path[k])
        if a is not None and b is not None and a != b:
            return ("pre" if a < b else "post"), k + 1
        return "", 0
    if k == 0 or k == len(py):
        # nothing shared; or the sample is at a line of the path that calls on towards the
        # model (its own work on that line: left to the names)
        return "", 0
    return "line", k


def placement(
    py: Stack, paths: list[ModelPath], frames: FrameRules | None = None
) -> tuple[str, Stack]:
    """Where a stack sits against the model paths: "pre", "post", "model", "line" (a call
    on a model call's own line: the line's frames are returned) or ""."""
    best, depth = "", 0
    line: Stack = ()
    for mp in paths:  # heaviest first: on a tie the heavier call decides
        path = anchored(mp, py)
        rel, d = relation(py, path, frames)
        if d > depth:
            best, depth = rel, d
            line = path[:d] if rel == "line" else ()
    return best, line


def place_sample(s: OnCpuSample, structure: Structure, frames: FrameRules) -> OnCpuSample:
    """``s`` with the category its place in the call structure gives it (unchanged where
    the structure does not place it)."""
    call = frames.model_call(s.stack)
    if call is not None:
        stage = frames.stage_by_name(s.stack, call[0])
        if stage is not None:
            return replace(s, category=stage, how="name")
        return replace(s, category=frames.inference_category(s.stack), how="structure")
    py = tuple(f for f in s.stack if not is_native_frame(f))
    if py and frames.wait_kind(py[-1]) is not None:
        return s  # waiting for work, a lock or I/O is no stage (on a CPU: a spin, a stale join)
    if structure.calls:
        where, line = placement(py, structure.calls, frames)
        if where == "line":
            callee = _name(py[len(line)]) if len(py) > len(line) else ""
            where = structure.by_source.get((line[-1], callee)) or structure.same_line.get(
                (s.tid, line), ""
            )
        if where == "model":
            return replace(s, category=frames.inference_category(s.stack), how="structure")
        if where in ("pre", "post"):
            return replace(s, category=_stage(where, s, frames), how="structure")
        if s.tid in structure.paths:
            return s
    serving = bool(py) and frames.is_serving(py[-1])
    if s.tid in structure.feeders and s.category != "serialisation" and not serving:
        return replace(s, category="preprocess", how="structure")
    return s


def _stage(where: str, s: OnCpuSample, frames: FrameRules) -> str:
    if where == "pre":
        return "preprocess"
    return "serialisation" if frames.stage_by_name(s.stack) == "serialisation" else "postprocess"


def samples_at_lines(ctx: Context, structure: Structure) -> list[tuple[int, Stack, Stack]]:
    """(tid, the line's frames, the Python stack) of every on-CPU sample in another call
    made on a model call's own line."""
    out = []
    for s in ctx.oncpu:
        if structure.calls and ctx.frames.model_call(s.stack) is None:
            py = tuple(f for f in s.stack if not is_native_frame(f))
            where, line = placement(py, structure.calls, ctx.frames)
            if where == "line":
                out.append((s.tid, line, py))
    return out


def same_line_order(
    ctx: Context, structure: Structure, at_lines: list[tuple[int, Stack, Stack]]
) -> dict[tuple[int, Stack], str]:
    """Calls made on a model call's own line, placed by the order they ran in (where the
    line's source does not say: :func:`source_orders`).

    For each such line of each thread: the thread's py-spy stacks in time order, in runs of
    consecutive stacks through that line (a run ends where the thread leaves the line, or
    after a gap of more than SEGMENT_GAP_S). A run that goes on towards the model and
    starts in another call of the line votes "pre"; one that ends in another call, "post";
    one request's run is one vote. Votes are counted, not timed: a run's last interval
    stretches to the thread's next sample, whatever it did meanwhile (at 18 Hz a whole
    model call). The order is the code's, so the votes of every thread at the same line
    are pooled; the line is "pre" or "post" where one side has ORDER_MARGIN times the
    other's votes and at least ORDER_MIN_VOTES."""
    iv, stacks = ctx.data.py_intervals, ctx.data.py_stacks
    lines = {(tid, line) for tid, line, _ in at_lines}
    if iv is None or iv.empty or not lines:
        return {}
    votes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for tid, line in sorted(lines):
        towards = _towards_model(line, structure.calls)
        mine = iv[iv["tid"] == tid].sort_values("start")
        kinds = np.array(
            [_through(stacks.get(int(i), ()), line, towards) for i in mine["stack_id"]]
        )
        pre, post = _order_votes(kinds, mine["start"].to_numpy(), mine["end"].to_numpy())
        v = votes[line[-1]]
        v[0] += pre
        v[1] += post
    order = {}
    for at, (pre, post) in votes.items():
        order[at] = (
            "pre"
            if pre >= ORDER_MIN_VOTES and pre >= ORDER_MARGIN * post
            else "post"
            if post >= ORDER_MIN_VOTES and post >= ORDER_MARGIN * pre
            else ""
        )
    return {(tid, line): order[line[-1]] for tid, line in lines}


def source_orders(
    ctx: Context, structure: Structure, at_lines: list[tuple[int, Stack, Stack]]
) -> dict[tuple[str, str], str]:
    """Calls made on a model call's own line, placed by the line's source: (the line's
    frame, the called function's name) -> "pre" | "post".

    The capture read the calls each line makes, in the order Python runs them (a call's
    arguments before the call: collect/linecalls.py); :func:`source_order` places each
    function seen called at the line against the call towards the model. Lines and calls
    the source does not place are left to the samples (:func:`same_line_order`)."""
    if not structure.calls or not ctx.data.py_line_calls:
        return {}
    seen: dict[Stack, set[str]] = defaultdict(set)
    for _, line, py in at_lines:
        if len(py) > len(line):
            seen[line].add(_name(py[len(line)]))
    out: dict[tuple[str, str], str] = {}
    for line, callees in seen.items():
        calls = ctx.data.py_line_calls.get(_line_key(line[-1]), [])
        towards = _towards_model(line, structure.calls)
        for callee in callees:
            order = source_order(calls, towards, callee, callees)
            if order:
                out[(line[-1], callee)] = order
    return out


def _name(frame: str) -> str:
    """The function's own name in a Python frame (``Model.predict`` -> ``predict``)."""
    return split_frame(frame)[0].rsplit(".", 1)[-1]


def _line_key(frame: str) -> str:
    """``FILE:LINE`` of a Python frame (python/calls.json's key), "" for another frame."""
    _, file = split_frame(frame)
    line = frame_line(frame)
    return f"{file}:{line}" if file and line is not None else ""


def source_order(
    calls: list[tuple[str, str]], towards: set[tuple[str, str]], callee: str, seen: set[str]
) -> str:
    """ "pre" or "post" for function ``callee`` called at a model call's line, from the
    calls the line makes in the order Python runs them, or "" where the source does not say.

    The call towards the model is the one named as the function it enters (``score``); a
    module or a model object called (``self.model(x)``: its frame is ``_call_impl`` or
    ``__call__``) is found instead as the line's only call, builtins aside, that is none of
    the functions ``seen`` called at the line besides it. ``callee`` is placed by its own
    call where the line names it (``score(clean(text))`` runs ``clean`` first,
    ``fmt(score(x))`` ``fmt`` last); a function the line does not name (an alias, a
    function a builtin calls, ``sorted(xs, key=f)``) by the line's other calls that can run
    Python frames (every call but a builtin's, and a builtin given a function), where they
    all come before the model call or all after it. A native model call has no frame to
    find it by: left to the samples."""
    if not calls or AT_LINE in towards:
        return ""
    names = {name.rsplit(".", 1)[-1] for name, _ in towards}
    at = [i for i, (name, _) in enumerate(calls) if name in names]
    if not at:
        candidates = [i for i, (name, kind) in enumerate(calls) if kind == "" and name not in seen]
        at = candidates if len(candidates) == 1 else []
    if not at:
        return ""
    mine = [i for i, (name, _) in enumerate(calls) if name == callee and i not in at]
    if not mine:
        mine = [i for i, (_, kind) in enumerate(calls) if i not in at and kind != "builtin"]
    if mine and max(mine) < min(at):
        return "pre"
    if mine and min(mine) > max(at):
        return "post"
    return ""


#: a Python stack at a model call's line itself, when the call is native (a GEMM)
AT_LINE = ("", "")


def _towards_model(line: Stack, paths: list[ModelPath]) -> set[tuple[str, str]]:
    """The functions the thread calls on ``line`` on its way to the model (AT_LINE where
    the call made there is native: py-spy's stack then ends at the line)."""
    d = len(line)
    out: set[tuple[str, str]] = set()
    for p in paths:
        path = anchored(p, line)
        if path[:d] != line:
            continue
        if len(path) > d:
            out.add(split_frame(path[d]))
        elif p.callee and not is_native_frame(p.callee):
            out.add(split_frame(p.callee))
        else:
            out.add(AT_LINE)
    return out


def _through(stack: Stack, line: Stack, towards: set[tuple[str, str]]) -> str:
    """ "M" for a Python stack through ``line`` on its way to the model, "G" through it into
    another call, "" not through it (or at the line itself, where that is not the call)."""
    d = len(line)
    if stack[:d] != line:
        return ""
    if len(stack) == d:
        return "M" if AT_LINE in towards else ""
    return "M" if split_frame(stack[d]) in towards else "G"


FloatArray = npt.NDArray[np.float64]


def _order_votes(
    kinds: npt.NDArray[np.str_], start: FloatArray, end: FloatArray
) -> tuple[int, int]:
    """Runs through the line that reach the model ("M") and were seen entering the line in
    another of its calls ("G"), and runs that reach it and were seen leaving the line from
    one. A run's ends count only where py-spy saw the thread outside the line right before
    or after: a run cut by a gap in the samples (py-spy restarted at a lower rate, or late
    on a loaded host) or by the recording's ends began or ended mid-request, wherever the
    thread was then (cut runs of a busy thread going from request to request were half of
    the votes on a 10 Hz capture, and said "post" as often as "pre")."""
    pre = post = 0
    run: list[str] = []
    entered = False  # the run began right after a sample outside the line

    def close(left: bool) -> tuple[int, int]:
        if "M" not in run:
            return 0, 0
        return int(entered and run[0] == "G"), int(left and run[-1] == "G")

    last_end = -np.inf
    outside = False  # the sample before was outside the line (and right before)
    for i, k in enumerate(kinds):
        gap = start[i] - last_end > SEGMENT_GAP_S
        if not k or gap:
            x, y = close(left=not k and not gap)
            pre, post, run = pre + x, post + y, []
        if k:
            if not run:
                entered = outside and not gap
            run.append(str(k))
        outside = not k
        last_end = end[i]
    x, y = close(left=False)
    return pre + x, post + y


# --- 3. feeding threads ----------------------------------------------------------------------


def feeders(ctx: Context, structure: Structure) -> dict[int, str]:
    """Threads that never call the model but hand work to threads that do: tid -> evidence
    (the hand-off frame seen in its Python stacks, or perf's count of wakeups of the model
    threads' waits for work). In a process that feeds a sibling process's model
    (``ctx.feeds``) and calls none itself, every thread running Python code is that feeding
    stage's."""
    model_tids = set(structure.paths)
    if not model_tids:
        if not ctx.feeds:
            return {}
        running = {s.tid for s in ctx.oncpu} & set(ctx.data.python_tids)
        return dict.fromkeys(sorted(running), ctx.feeds)
    data, frames = ctx.data, ctx.frames
    out: dict[int, str] = {}
    iv = data.py_intervals
    if iv is not None and not iv.empty:
        handoff: dict[int, str] = {}
        for sid, st in data.py_stacks.items():
            hit = next((f for f in reversed(st) if frames.is_handoff(f)), "")
            if hit:
                handoff[sid] = hit
        seen = iv[iv["stack_id"].isin(list(handoff)) & ~iv["tid"].isin(model_tids)]
        first = seen.groupby("tid")["stack_id"].first()
        for tid, sid in zip(first.index.to_numpy(), first.to_numpy(), strict=True):
            out[int(tid)] = f"hands work over at {handoff[int(sid)]}"
    fx = ctx.futex
    if fx is not None and not fx.empty and "waker" in fx:
        woken = fx[(fx["kind"] == "condition") & fx["tid"].isin(model_tids) & fx["waker"].notna()]
        py_tids = data.python_tids
        sizes = woken.groupby("waker").size()
        for waker, n in zip(sizes.index.to_numpy(), sizes.to_numpy(), strict=True):
            w = int(waker)
            if w in model_tids or w in out or w not in py_tids or n < FEEDER_WAKES:
                continue
            out[w] = f"woke the model threads' waits for work {int(n)} times (perf)"
    return out


def sends(ctx: Context) -> str:
    """The first frame of the process's Python stacks that sends work to another process
    (``[structure] sends``: a multiprocessing queue's put, a connection's send), or ""."""
    for stack in ctx.data.py_stacks.values():
        hit = next((f for f in stack if ctx.frames.is_send(f)), "")
        if hit:
            return hit
    return ""


# --- metrics ---------------------------------------------------------------------------------


def _metrics(ctx: Context, structure: Structure) -> None:
    m = ctx.metrics
    total = sum(s.weight for s in ctx.oncpu)
    placed = sum(s.weight for s in ctx.oncpu if s.how == "structure")
    m["oncpu_share_placed"] = rounded(placed / total, 4) if total > 0 else 0.0
    m["model_call_threads"] = len(structure.paths)
    m["feeder_threads"] = len(structure.feeders)
    calls: dict[str, float] = defaultdict(float)
    for paths in structure.paths.values():
        for mp in paths:
            calls[mp.path[-1]] += mp.weight
    m["model_call_site"] = most_common(calls, 1)[0][0] if calls else ""
    names = ctx.data.py_names
    ctx.out.oncpu["structure"] = {
        "placed_share": m["oncpu_share_placed"],
        "model_calls": [
            (site, rounded(w / total, 4) if total > 0 else 0.0) for site, w in most_common(calls, 5)
        ],
        "model_threads": [
            {"tid": tid, "name": names.get(tid, "")} for tid in sorted(structure.paths)[:50]
        ],
        "feeders": [
            {"tid": tid, "name": names.get(tid, ""), "evidence": ev}
            for tid, ev in sorted(structure.feeders.items())[:20]
        ],
        "sends": sends(ctx),
        "same_line": [
            {"tid": tid, "line": line[-1], "order": order or "not measured"}
            for (tid, line), order in sorted(structure.same_line.items())[:20]
        ],
        "same_line_by_source": [
            {"line": line, "call": callee, "order": order}
            for (line, callee), order in sorted(structure.by_source.items())[:20]
        ],
    }


def thread_category(ctx: Context, tid: int, stack: Stack, fallback: str | None = None) -> str:
    """The category of a Python stack of thread ``tid`` seen outside the on-CPU samples
    (py-spy --gil's, say): by the call structure found, else its names; never a stage
    without a model call (no model seen: nothing to be before or after, whatever the
    function is called)."""
    s = OnCpuSample(tid, stack, 0.0, fallback or ctx.frames.categorize(stack))
    if ctx.structure is None or not ctx.structure.calls:
        return "other" if ctx.frames.is_stage(s.category) else s.category
    return place_sample(s, ctx.structure, ctx.frames).category
