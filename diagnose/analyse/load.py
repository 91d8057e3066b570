"""Loading a bundle's tables into pandas, once, for every analysis step.

Each table is ``None`` when its collector did not run or its file is unreadable; the
reason is kept in ``missing`` so metrics that need it can say why they are absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from diagnose.analyse.arch import DEFAULT_MACHINE, recorded_machine
from diagnose.bundle.reader import Bundle
from diagnose.errors import BadBundle


@dataclass
class BundleData:
    bundle: Bundle
    system: dict[str, Any]
    threads: pd.DataFrame | None  # proc/threads.csv
    process: pd.DataFrame | None  # proc/process.csv
    cpus: pd.DataFrame | None  # proc/cpus.csv
    py_intervals: pd.DataFrame | None  # python/intervals.csv
    py_stacks: dict[int, tuple[str, ...]]  # stack_id -> frames
    py_names: dict[int, str]  # tid -> Python thread name
    gil_folded: str | None
    native_samples: pd.DataFrame | None  # native/samples.csv (perf), t,tid,stack_id[,weight]
    native_stacks: dict[int, tuple[str, ...]]
    missing: dict[str, str] = field(default_factory=dict)  # source -> why it is absent
    machine: str = DEFAULT_MACHINE  # the machine the bundle was recorded on (uname -m)

    def reason(self, source: str) -> str:
        return self.missing.get(source, "")


def _collector_reason(bundle: Bundle, name: str) -> str:
    rec = bundle.collector(name)
    return (
        f"{name} {rec.status.value}: {rec.reason}" if rec.reason else f"{name} {rec.status.value}"
    )


def _stacks(bundle: Bundle, rel: str) -> dict[int, tuple[str, ...]]:
    df = bundle.table(rel, ["stack_id", "frames"], {"stack_id": "int"})
    return {
        int(sid): tuple(str(frames).split(";")) if isinstance(frames, str) else ()
        for sid, frames in zip(df["stack_id"], df["frames"], strict=True)
    }


def load(bundle: Bundle) -> BundleData:
    missing: dict[str, str] = {}
    system: dict[str, Any] = {}
    if bundle.has("system.json"):
        try:
            raw = bundle.json("system.json")
            system = raw if isinstance(raw, dict) else {}
        except BadBundle as exc:
            missing["system"] = str(exc)
    else:
        missing["system"] = _collector_reason(bundle, "system")

    threads = process = cpus = None
    if bundle.usable("proc"):
        try:
            threads = bundle.table(
                "proc/threads.csv",
                ["t", "tid", "state"],
                {"t": "float", "tid": "int", "oncpu_ns": "float", "runq_ns": "float",
                 "slices": "float", "utime": "float", "stime": "float"},
            )  # fmt: skip
            process = bundle.table("proc/process.csv", ["t"], {"t": "float"})
            cpus = bundle.table(
                "proc/cpus.csv",
                ["t", "cpu", "busy_jiffies", "total_jiffies"],
                {"t": "float", "cpu": "int", "busy_jiffies": "float", "total_jiffies": "float"},
            )
        except BadBundle as exc:
            missing["proc"] = str(exc)
            threads = process = cpus = None
        if threads is not None and threads.empty:
            missing["proc"] = "proc/threads.csv has no rows"
            threads = None
    else:
        missing["proc"] = _collector_reason(bundle, "proc")

    py_intervals = None
    py_stacks: dict[int, tuple[str, ...]] = {}
    py_names: dict[int, str] = {}
    if bundle.usable("pyspy") and bundle.has("python/intervals.csv"):
        try:
            py_intervals = bundle.table(
                "python/intervals.csv",
                ["tid", "start", "end", "stack_id"],
                {"tid": "int", "start": "float", "end": "float", "stack_id": "int"},
            )
            py_stacks = _stacks(bundle, "python/stacks.csv")
            if bundle.has("python/threads.csv"):
                names = bundle.table("python/threads.csv", ["tid"], {"tid": "int"})
                py_names = {
                    int(t): ("" if pd.isna(n) else str(n))
                    for t, n in zip(names["tid"], names.get("name", ""), strict=False)
                }
        except BadBundle as exc:
            missing["pyspy"] = str(exc)
            py_intervals = None
    else:
        missing["pyspy"] = _collector_reason(bundle, "pyspy")

    gil_folded = None
    if bundle.usable("gil") and bundle.has("python/gil.folded"):
        try:
            gil_folded = bundle.text("python/gil.folded")
        except BadBundle as exc:
            missing["gil"] = str(exc)
    else:
        missing["gil"] = _collector_reason(bundle, "gil")

    native_samples = None
    native_stacks: dict[int, tuple[str, ...]] = {}
    if bundle.usable("perf") and bundle.has("native/samples.csv"):
        try:
            native_samples = bundle.table(
                "native/samples.csv",
                ["t", "tid", "stack_id"],
                {"t": "float", "tid": "int", "stack_id": "int"},
            )
            native_stacks = _stacks(bundle, "native/stacks.csv")
        except BadBundle as exc:
            missing["perf"] = str(exc)
            native_samples = None
    else:
        missing["perf"] = _collector_reason(bundle, "perf")

    return BundleData(
        bundle=bundle,
        system=system,
        threads=threads,
        process=process,
        cpus=cpus,
        py_intervals=py_intervals,
        py_stacks=py_stacks,
        py_names=py_names,
        gil_folded=gil_folded,
        native_samples=native_samples,
        native_stacks=native_stacks,
        missing=missing,
        machine=recorded_machine(system, bundle.manifest.host),
    )


def map_distinct(values: pd.Series | np.ndarray, func: Callable[[Any], Any]) -> np.ndarray:
    """``func`` of every value, calling it once per distinct value (an object array).
    Missing values (None, NaN) count as one value and are passed as NaN.

    A long capture has millions of rows but few distinct stacks, frames or addresses:
    this is what keeps the analysis linear in rows with a small constant."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    out = np.empty(len(uniques), dtype=object)
    out[:] = [func(u) for u in uniques]
    return out[codes]
