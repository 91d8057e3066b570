"""The records that pass between analysis steps, and the one signature every step has.

A step is ``step(ctx: Context) -> None``: it reads the bundle's tables (``ctx.data``, never
changed) and what earlier steps left in ``ctx``, and adds its metrics and report tables to
``ctx.out`` (the :class:`Analysis` the report reads). :mod:`diagnose.analyse.pipeline` lists
the steps in the order they run.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, TypeVar

import pandas as pd

from diagnose.analyse.frames import FrameRules
from diagnose.analyse.load import BundleData
from diagnose.formats.stacks import Stack

#: Thread states, and those in which a thread wanted to make progress (busy time).
STATES = ("running", "runnable", "gil", "lock", "io", "idle", "other")
BUSY_STATES = ("running", "runnable", "gil", "lock", "io")


@dataclass
class ThreadTime:
    """Where each thread's time went: one row per thread per /proc tick interval
    (``intervals``, seconds per state in the columns named by STATES) and its sums per
    thread (``per_thread``). Final when the thread-state step has run: every later step
    reads the same totals."""

    intervals: pd.DataFrame
    per_thread: pd.DataFrame
    window: float  # seconds covered by the /proc sampler
    gil_range: tuple[int, int] | None
    native_mutex_s: float = 0.0  # blocked time of native threads moved from idle to lock
    pool_wait_s: float = 0.0  # waits for a resource peers hand back, moved from idle to lock


@dataclass(frozen=True)
class OnCpuSample:
    """On-CPU time of one thread in one stack (root first), and its category."""

    tid: int
    stack: Stack
    weight: float  # perf samples, or CPU-seconds for py-spy stacks
    category: str  # a category of rules/frames.toml, or "other"
    #: what decided the category: "name" (frames.toml), or "structure": where the sample
    #: sits relative to the model call (analyse/stages.py)
    how: str = "name"
    #: of ``weight``, the perf samples whose Python stack py-spy saw again after them (the
    #: join is sure: joins.python_stack_seen); None: all of it (py-spy's own stacks)
    sure: float | None = None

    @property
    def sure_weight(self) -> float:
        return self.weight if self.sure is None else self.sure


@dataclass(frozen=True)
class ModelPath:
    """Where a thread calls the model: its Python frames from the root to the frame that
    makes the call (``path[-1]``, at the line of the call), and how the call was found
    ("framework": a model framework's frame; "kernel": a native compute kernel)."""

    path: Stack
    found_by: str
    weight: float  # on-CPU time inside the model reached from this path
    callee: str = ""  # the call's first frame (a framework's Python frame, or native)
    #: the stacks that showed it were cut short (they start inside the thread, not at its
    #: entry: analyse/stages.py, anchored), and the line's source confirms the call
    cut: bool = False


@dataclass
class Structure:
    """The call structure the stage step found: per thread the paths that call the model
    (and all of them merged, ``calls``), the threads that feed them (tid -> the evidence), and how calls made on a model call's
    own line were ordered (``same_line``: (tid, the line's frames) -> "pre" | "post" | "")."""

    paths: dict[int, list[ModelPath]] = field(default_factory=dict)
    #: every thread's paths merged (threads that run the same handler call the model at the
    #: same place): what samples are placed against
    calls: list[ModelPath] = field(default_factory=list)
    feeders: dict[int, str] = field(default_factory=dict)
    same_line: dict[tuple[int, Stack], str] = field(default_factory=dict)
    #: calls on a model call's line placed by the line's source (python/calls.json):
    #: (the line's frame, the called function's name) -> "pre" | "post"
    by_source: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class HolderThread:
    tid: int
    name: str
    count: int  # ticks it was seen inside the locked region, or releases perf saw


#: How a measured holder was found, as the report says it.
MEASURED_HOLDER = "perf: the thread whose FUTEX_WAKE on the address (or wakeup) ended each wait"


@dataclass(frozen=True)
class Holder:
    """Who held a lock while others waited, and what it ran meanwhile, inside the locked
    region (:func:`diagnose.analyse.frames.inside_region`).

    *Measured* where perf recorded the releases (the thread whose FUTEX_WAKE ended each
    wait); *inferred* from py-spy otherwise (a thread seen running inside the region at the
    /proc ticks where others waited), and the report says which."""

    site: str  # the leaf frame it ran most, inside the region
    threads: tuple[HolderThread, ...]  # most often first, at most five
    measured: bool
    evidence: int  # inferred: ticks seen inside the region; measured: releases seen
    sites: tuple[tuple[str, float | None], ...] = ()  # measured: leaf frames, share of time
    # measured: the share of the time it held the lock that it spent waiting for the GIL
    # (perf's futex waits on the GIL inside its hold windows); None where not measured
    gil_wait_share: float | None = None

    @property
    def thread(self) -> str:
        """The thread that held it most: 'NAME (TID)', or the tid alone."""
        top = self.threads[0]
        return f"{top.name} ({top.tid})" if top.name else str(top.tid)

    def to_dict(self) -> dict[str, Any]:
        count = "releases" if self.measured else "ticks"
        threads = [{"tid": t.tid, "name": t.name, count: t.count} for t in self.threads]
        if not self.measured:
            return {"site": self.site, "ticks": self.evidence, "threads": threads, "inferred": True}
        return {
            "thread": self.thread,
            "site": self.site,
            "sites": list(self.sites),
            "threads": threads,
            "releases_seen": self.evidence,
            "gil_wait_share": self.gil_wait_share,
            "inferred": False,
            "source": MEASURED_HOLDER,
        }


@dataclass
class Hotspot:
    """A lock two or more threads waited on (one futex address, or one Python wait site
    seen through several addresses), with its holder."""

    key: str  # "addr:ADDRESS" or "site:FRAME"
    address: str  # its address, or "N addresses"
    addresses: list[str]
    waiters: int
    waiter_threads: list[dict[str, Any]]  # tid, name, wait_s
    wait_s: float | None
    share_of_busy: float | None
    site: str  # where the waiters wait: their most common leaf frame
    sites: list[tuple[str, int | float]]
    max_concurrent_waiters: int | None
    holder: Holder | None
    stacks: list[dict[str, Any]] | None = None  # the waiters' Python stacks (py-spy)
    source: str | None = None  # "perf": found by perf alone (a native target)
    perf: dict[str, Any] | None = None  # perf's view of the same lock
    holder_inferred: Holder | None = None  # kept where a measured holder replaced it

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,
            "address": self.address,
            "addresses": self.addresses,
            "waiters": self.waiters,
            "waiter_threads": self.waiter_threads,
            "wait_s": self.wait_s,
            "share_of_busy": self.share_of_busy,
            "site": self.site,
            "sites": self.sites,
            "max_concurrent_waiters": self.max_concurrent_waiters,
            "holder": self.holder.to_dict() if self.holder else None,
        }
        if self.stacks is not None:
            out["stacks"] = self.stacks
        if self.source is not None:
            out["source"] = self.source
        if self.perf is not None:
            out["perf"] = self.perf
        if self.holder_inferred is not None:
            out["holder_inferred"] = self.holder_inferred.to_dict()
        return out


@dataclass
class Analysis:
    """What the report reads: metrics (``None`` = not measured, with the reason in
    ``unmeasured``), per-thread table, and the tables and series the report draws."""

    metrics: dict[str, Any]
    unmeasured: dict[str, str]
    per_thread: pd.DataFrame | None
    thread_time: ThreadTime | None
    oncpu: dict[str, Any] = field(default_factory=dict)
    locks: list[dict[str, Any]] = field(default_factory=list)
    flames: dict[str, list[tuple[Stack, float]]] = field(default_factory=dict)
    #: the on-CPU category (a stage, or a kernel type) of each (thread, stack) of the
    #: ``cpu`` flame view: what an export labels its samples with
    cpu_stages: dict[tuple[int, Stack], str] = field(default_factory=dict)
    series: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Context:
    """One analysis in progress: the bundle's tables, the frame rules, what earlier steps
    derived, and the :class:`Analysis` being built."""

    data: BundleData
    frames: FrameRules
    out: Analysis
    #: thread states (set by the thread-state step; None without /proc)
    threads: ThreadTime | None = None
    #: perf's futex waits, each with its wait ``kind`` (gil, lock, condition, io, other),
    #: the waiter's Python leaf and native leaf (set by the thread-state step; None
    #: without perf's futex tracepoints)
    futex: pd.DataFrame | None = None
    #: on-CPU samples, categorised (set by the on-CPU step, placed by the stage step)
    oncpu: list[OnCpuSample] = field(default_factory=list)
    #: the call structure: where threads call the model, who feeds them (the stage step)
    structure: Structure | None = None
    #: lock hot spots, longest wait first (set by the lock steps)
    hotspots: list[Hotspot] = field(default_factory=list)
    #: why this process is the feeding stage of a sibling process that calls the model
    #: ("" where it is not: analyse/service.py, feeding_processes)
    feeds: str = ""

    @property
    def metrics(self) -> dict[str, Any]:
        return self.out.metrics


Step = Callable[[Context], None]


def rounded(x: float | None, nd: int = 4) -> float | None:
    """A metric value: ``x`` rounded, None for None, NaN and infinities."""
    if x is None:
        return None
    try:
        if math.isnan(x) or math.isinf(x):
            return None
    except TypeError:
        return None
    return round(float(x), nd)


def ratio(a: float, b: float) -> float | None:
    return None if b <= 0 else a / b


K = TypeVar("K", bound=Hashable)


def most_common(weights: Mapping[K, float], n: int | None = None) -> list[tuple[K, float]]:
    """``Counter.most_common`` for weights that are not counts (seconds, CPU time):
    heaviest first, ties in the order they were first added."""
    if n is None:
        return sorted(weights.items(), key=itemgetter(1), reverse=True)
    return heapq.nlargest(n, weights.items(), key=itemgetter(1))


def series_items(s: pd.Series) -> list[tuple[Any, Any]]:
    """(index, value) pairs of ``s`` as plain Python values."""
    return list(zip(s.index.tolist(), s.tolist(), strict=True))
