"""Loading a bundle's tables into pandas, once, for every analysis step.

Each table is ``None`` (or empty) when its collector did not run or its file is unreadable;
the reason is kept in ``missing`` so metrics that need it can say why they are absent. The
steps never change what was loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from diagnose.analyse.arch import recorded_machine
from diagnose.bundle.reader import Bundle
from diagnose.errors import BadBundle
from diagnose.formats import x86
from diagnose.formats.stacks import Stack

StackTable = dict[int, Stack]  # stack_id -> frames, root first
#: the columns of every stacks.csv (python/, native/, sched/)
STACK_COLUMNS = ["stack_id", "frames"]


@dataclass(frozen=True)
class BundleData:
    bundle: Bundle
    system: dict[str, Any]
    threads: pd.DataFrame | None  # proc/threads.csv
    process: pd.DataFrame | None  # proc/process.csv
    cpus: pd.DataFrame | None  # proc/cpus.csv
    py_intervals: pd.DataFrame | None  # python/intervals.csv
    py_stacks: StackTable
    py_names: dict[int, str]  # tid -> Python thread name
    gil_folded: str | None
    native_samples: pd.DataFrame | None  # native/samples.csv (perf), t,tid,stack_id[,weight]
    native_stacks: StackTable
    missing: dict[str, str] = field(default_factory=dict)  # source -> why it is absent
    sched_offcpu: pd.DataFrame | None = None  # sched/offcpu.csv (perf_sched)
    sched_futex: pd.DataFrame | None = None  # sched/futex.csv (perf_sched)
    sched_stacks: StackTable = field(default_factory=dict)  # sched/stacks.csv
    c2c: dict[str, Any] | None = None  # c2c/lines.json
    perf_stat: str | None = None  # native/perf-stat.csv
    fs_samples: pd.DataFrame | None = None  # false_sharing/samples.csv
    fs_code: dict[str, Any] | None = None  # false_sharing/code.json
    host_procs: pd.DataFrame | None = None  # proc/host.csv: other processes' CPU
    #: python/calls.json: "FILE:LINE" -> the calls that line makes, in the order they run,
    #: each (name, kind) (collect/linecalls.py); empty in bundles without it
    py_line_calls: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def machine(self) -> str:
        """The machine the bundle was recorded on (``uname -m``): see analyse/arch.py."""
        return recorded_machine(self.system, self.bundle.manifest.host.to_dict())

    @property
    def pyspy_rate(self) -> float:
        """py-spy's sampling rate in the bundle (Hz)."""
        pyspy = self.bundle.collector("pyspy").details or {}
        return float(pyspy.get("rate_hz") or self.bundle.manifest.capture.rate_hz or 100)

    @property
    def gil_range(self) -> tuple[int, int] | None:
        """[start, end) of the interpreter's ``_PyRuntime``, where CPython keeps the GIL."""
        rt = (self.system.get("python") or {}).get("runtime") or {}
        try:
            return int(str(rt["start"]), 16), int(str(rt["end"]), 16)
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def python_tids(self) -> set[int]:
        """Threads py-spy saw (named, or with a stack)."""
        tids = set(self.py_names)
        if self.py_intervals is not None:
            tids |= set(self.py_intervals["tid"].unique().tolist())
        return tids


def collector_reason(bundle: Bundle, name: str) -> str:
    """Why collector ``name`` left no data: its status and the reason it gave."""
    rec = bundle.collector(name)
    return (
        f"{name} {rec.status.value}: {rec.reason}" if rec.reason else f"{name} {rec.status.value}"
    )


def stack_table(df: pd.DataFrame) -> StackTable:
    """A ``stack_id,frames`` table (frames joined by ';', root first) as a dict."""
    return {
        int(sid): tuple(str(frames).split(";")) if isinstance(frames, str) else ()
        for sid, frames in zip(df["stack_id"], df["frames"], strict=True)
    }


def load(bundle: Bundle) -> BundleData:
    missing: dict[str, str] = {}
    system = _system(bundle, missing)
    threads, process, cpus = _proc(bundle, missing)
    py_intervals, py_stacks, py_names = _pyspy(bundle, missing)
    gil_folded = None
    if bundle.usable("gil") and bundle.has("python/gil.folded"):
        try:
            gil_folded = bundle.text("python/gil.folded")
        except BadBundle as exc:
            missing["gil"] = str(exc)
    else:
        missing["gil"] = collector_reason(bundle, "gil")
    native_samples, native_stacks = _perf(bundle, missing)
    offcpu, futex, sched_stacks = _perf_sched(bundle, missing)
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
        sched_offcpu=offcpu,
        sched_futex=futex,
        sched_stacks=sched_stacks,
        c2c=_c2c(bundle, missing),
        host_procs=_host_procs(bundle, missing),
        py_line_calls=_line_calls(bundle) if py_intervals is not None else {},
        perf_stat=_perf_stat(bundle, missing),
        **_false_sharing(bundle, missing),
    )


def _system(bundle: Bundle, missing: dict[str, str]) -> dict[str, Any]:
    if not bundle.has("system.json"):
        missing["system"] = collector_reason(bundle, "system")
        return {}
    try:
        raw = bundle.json("system.json")
    except BadBundle as exc:
        missing["system"] = str(exc)
        return {}
    return raw if isinstance(raw, dict) else {}


Tables3 = tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]


def _proc(bundle: Bundle, missing: dict[str, str]) -> Tables3:
    if not bundle.usable("proc"):
        missing["proc"] = collector_reason(bundle, "proc")
        return None, None, None
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
        return None, None, None
    if threads.empty:
        missing["proc"] = "proc/threads.csv has no rows"
        return None, process, cpus
    return threads, process, cpus


def _host_procs(bundle: Bundle, missing: dict[str, str]) -> pd.DataFrame | None:
    """proc/host.csv, written by the /proc sampler since it scans the host's processes."""
    if not bundle.usable("proc"):
        missing["host_procs"] = collector_reason(bundle, "proc")
        return None
    if not bundle.has("proc/host.csv"):
        missing["host_procs"] = (
            "the bundle has no proc/host.csv (recorded before diagnose scanned other processes)"
        )
        return None
    try:
        return bundle.table(
            "proc/host.csv",
            ["t", "pid", "cpu_s"],
            {"t": "float", "pid": "int", "cpu_s": "float"},
        )
    except BadBundle as exc:
        missing["host_procs"] = str(exc)
        return None


def _pyspy(
    bundle: Bundle, missing: dict[str, str]
) -> tuple[pd.DataFrame | None, StackTable, dict[int, str]]:
    if not (bundle.usable("pyspy") and bundle.has("python/intervals.csv")):
        missing["pyspy"] = collector_reason(bundle, "pyspy")
        return None, {}, {}
    names: dict[int, str] = {}
    try:
        intervals = bundle.table(
            "python/intervals.csv",
            ["tid", "start", "end", "stack_id"],
            {"tid": "int", "start": "float", "end": "float", "stack_id": "int"},
        )
        stacks = stack_table(bundle.table("python/stacks.csv", STACK_COLUMNS, {"stack_id": "int"}))
        if bundle.has("python/threads.csv"):
            df = bundle.table("python/threads.csv", ["tid"], {"tid": "int"})
            names = {
                int(t): ("" if pd.isna(n) else str(n))
                for t, n in zip(df["tid"], df.get("name", ""), strict=False)
            }
    except BadBundle as exc:
        missing["pyspy"] = str(exc)
        return None, {}, {}
    return intervals, stacks, names


def _perf(bundle: Bundle, missing: dict[str, str]) -> tuple[pd.DataFrame | None, StackTable]:
    if not (bundle.usable("perf") and bundle.has("native/samples.csv")):
        missing["perf"] = collector_reason(bundle, "perf")
        return None, {}
    try:
        samples = bundle.table(
            "native/samples.csv",
            ["t", "tid", "stack_id"],
            {"t": "float", "tid": "int", "stack_id": "int"},
        )
        stacks = stack_table(bundle.table("native/stacks.csv", STACK_COLUMNS, {"stack_id": "int"}))
    except BadBundle as exc:
        missing["perf"] = str(exc)
        return None, {}
    return samples, stacks


def _perf_sched(
    bundle: Bundle, missing: dict[str, str]
) -> tuple[pd.DataFrame | None, pd.DataFrame | None, StackTable]:
    """perf's scheduler and futex tables. Every column read from them must be there, so an
    empty or foreign table is missing (the first such problem is the reason); a row needs
    values in ``cols`` only (an off-CPU period whose wakeup perf did not see has no
    run-queue delay, and is still a switch and off-CPU time)."""
    if not bundle.usable("perf_sched"):
        missing["perf_sched"] = collector_reason(bundle, "perf_sched")
        return None, None, {}

    def table(rel: str, cols: list[str], dtypes: dict[str, str]) -> pd.DataFrame | None:
        if not bundle.has(rel):
            return None
        try:
            df = bundle.table(rel, cols, dtypes)
        except BadBundle as exc:
            missing.setdefault("perf_sched", str(exc))
            return None
        absent = [c for c in dtypes if c not in df.columns]
        if absent:
            missing.setdefault("perf_sched", f"{rel} lacks column(s) {', '.join(absent)}")
            return None
        return df

    stacks = table("sched/stacks.csv", STACK_COLUMNS, {"stack_id": "int"})
    offcpu = table(
        "sched/offcpu.csv",
        ["t", "tid", "state", "stack_id"],
        {"t": "float", "tid": "int", "dur": "float", "runq": "float", "stack_id": "int"},
    )
    futex = table(
        "sched/futex.csv",
        ["t", "tid", "uaddr", "op"],
        {"t": "float", "tid": "int", "dur": "float", "stack_id": "int", "blocked": "int"},
    )
    return offcpu, futex, stack_table(stacks) if stacks is not None else {}


def _line_calls(bundle: Bundle) -> dict[str, list[tuple[str, str]]]:
    """python/calls.json, or nothing (older bundles, an unreadable file: the order of the
    calls on a line is then measured from the samples alone)."""
    if not bundle.has("python/calls.json"):
        return {}
    try:
        doc = bundle.json("python/calls.json")
    except BadBundle:
        return {}
    return {
        str(at): [(str(c[0]), str(c[1])) for c in calls if len(c) == 2] for at, calls in doc.items()
    }


def _c2c(bundle: Bundle, missing: dict[str, str]) -> dict[str, Any] | None:
    if not bundle.usable("c2c"):
        missing["c2c"] = collector_reason(bundle, "c2c")
        return None
    if not bundle.has("c2c/lines.json"):
        return None
    try:
        report = bundle.json("c2c/lines.json")
    except BadBundle as exc:
        missing["c2c"] = str(exc)
        return None
    return report if isinstance(report, dict) else None


def _perf_stat(bundle: Bundle, missing: dict[str, str]) -> str | None:
    if not bundle.usable("perf_stat"):
        missing["perf_stat"] = collector_reason(bundle, "perf_stat")
        return None
    if not bundle.has("native/perf-stat.csv"):
        return None
    try:
        return bundle.text("native/perf-stat.csv")
    except BadBundle:
        return None


def _false_sharing(bundle: Bundle, missing: dict[str, str]) -> dict[str, Any]:
    """``fs_samples`` and ``fs_code``: the false_sharing collector's samples with their
    address registers, and the code kept at their IPs (both, or neither)."""
    name = "false_sharing"
    if not bundle.usable(name):
        missing[name] = collector_reason(bundle, name)
        return {}
    rel = f"{name}/samples.csv"
    try:
        samples = bundle.table(rel, ["tid", "ip", "samples"])
        rel = f"{name}/code.json"
        code = bundle.json(rel)
    except BadBundle as exc:
        why = str(exc)
        missing[name] = why if rel in why else f"{rel}: {why}"
        return {}
    if not isinstance(code, dict):
        missing[name] = f"{rel} is not an object"
        return {}
    unavailable = x86.available()
    if unavailable:
        missing[name] = f"cannot decode the recorded code: {unavailable}"
        return {}
    return {"fs_samples": samples, "fs_code": code}
