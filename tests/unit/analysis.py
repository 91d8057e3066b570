"""Hand-built bundle tables for analysis unit tests: a BundleData from a few rows, and a
Context to run one step, or a few, on (``run(data, step, ...)``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from diagnose.analyse.frames import frame_rules
from diagnose.analyse.load import BundleData, StackTable
from diagnose.analyse.model import Analysis, Context, Step
from diagnose.bundle.manifest import CollectorRecord, CollectorStatus, Manifest
from diagnose.bundle.reader import Bundle
from diagnose.bundle.sections import CaptureInfo, TargetInfo

FR = frame_rules()
NS = 1_000_000_000
FUTEX = 202  # x86_64, the machine the hand-built bundles record
NANOSLEEP = 35
SYSTEM = {"capacity": {"cores_available": 2, "usable_cpus": [0, 1]}}


def ticks(tid: int, cum_on: Sequence[float], cum_rq: Sequence[float] | None = None,
          state: str = "R", step: float = 0.1, **extra: Any) -> list[dict[str, Any]]:  # fmt: skip
    """/proc rows of one thread, one per tick: cumulative on-CPU and run-queue seconds."""
    rq = cum_rq if cum_rq is not None else [0.0] * len(cum_on)
    return [
        {"t": round(i * step, 9), "tid": tid, "state": state, "on": on, "rq": r, **extra}
        for i, (on, r) in enumerate(zip(cum_on, rq, strict=True))
    ]


def threads_table(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(list(rows))
    df["oncpu_ns"] = (df.pop("on") * NS).astype(float)
    df["runq_ns"] = (df.pop("rq") * NS).astype(float)
    if "slices" not in df:
        df["slices"] = 1.0
    for col, default in (("comm", "python"), ("cpu", 0), ("syscall", float("nan")), ("arg0", "")):
        if col not in df:
            df[col] = default
    df["arg0"] = df["arg0"].fillna("")
    df["utime"] = df["stime"] = 0.0
    return df


def bundle_data(
    rows: Iterable[dict[str, Any]] = (),
    intervals: Iterable[tuple[int, float, float, int]] = (),
    stacks: StackTable | None = None,
    *,
    names: dict[int, str] | None = None,
    system: dict[str, Any] | None = None,
    is_python: bool = True,
    collectors: dict[str, CollectorStatus] | None = None,
    missing: dict[str, str] | None = None,
    **tables: Any,
) -> BundleData:
    """A BundleData from /proc thread rows (:func:`ticks`), py-spy intervals (tid, start,
    end, stack_id) and their stacks; ``tables`` sets any other BundleData field
    (``sched_futex=``, ``native_samples=``, ...)."""
    rows = list(rows)
    iv = pd.DataFrame(list(intervals), columns=["tid", "start", "end", "stack_id"])
    manifest = Manifest(
        tool_version="test",
        target=TargetInfo(is_python=is_python),
        capture=CaptureInfo(rate_hz=100),
        state="complete",
        collectors={n: CollectorRecord(n, s) for n, s in (collectors or {}).items()},
    )
    if names is None:
        names = {int(t): f"thread-{t}" for t in iv["tid"].unique()} if len(iv) else {}
    return BundleData(
        bundle=Bundle(Path("/nonexistent"), manifest),
        system=SYSTEM if system is None else system,
        threads=threads_table(rows) if rows else None,
        process=tables.pop("process", None),
        cpus=tables.pop("cpus", None),
        py_intervals=iv if len(iv) else None,
        py_stacks=stacks or {},
        py_names=names,
        gil_folded=tables.pop("gil_folded", None),
        native_samples=tables.pop("native_samples", None),
        native_stacks=tables.pop("native_stacks", {}),
        missing=missing
        if missing is not None
        else {"perf": "perf unavailable: perf is not installed"},
        **tables,
    )


def futex_table(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """perf's sched/futex.csv: t, tid, uaddr, op, dur, stack_id, blocked, waker, wake_t."""
    df = pd.DataFrame(list(rows))
    defaults = {"op": "WAIT_PRIVATE", "stack_id": -1, "blocked": 1, "waker": float("nan"),
                "wake_t": float("nan")}  # fmt: skip
    for col, value in defaults.items():
        if col not in df:
            df[col] = value
    return df


def context(data: BundleData) -> Context:
    return Context(data, FR, Analysis(metrics={}, unmeasured={}, per_thread=None, thread_time=None))


def run(data: BundleData, *steps: Step) -> Context:
    """``steps`` in order over ``data``: what they left in the context."""
    ctx = context(data)
    for step in steps:
        step(ctx)
    return ctx
