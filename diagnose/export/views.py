"""From an analysis to one :class:`FlatProfile` per flame view it built (the views the HTML
report draws, with every frame and line kept).

A flame view's stacks are rooted at their thread (``thread (TID): NAME``), and the waits and
off-CPU views add a frame for the wait class or the thread state; here those become labels
(thread_id, thread_name, thread_role, stage, wait, thread_state), so that only code is left
in the stacks, as pprof viewers expect. Values are integers in the units pprof names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from diagnose.analyse.model import Analysis
from diagnose.export.profile import FlatProfile, FlatSample, ValueType
from diagnose.formats.stacks import Stack, ThreadFrame

if TYPE_CHECKING:
    from diagnose.bundle.reader import Bundle

#: the views an export can hold, in the order they are listed
VIEWS = ("cpu", "offcpu", "waits", "wall")
ABOUT = {
    "cpu": "on-CPU time by stack",
    "offcpu": "time threads spent blocked off-CPU (perf's scheduler events), by stack",
    "waits": "time threads waited on the GIL, a lock or I/O (/proc), by Python stack",
    "wall": "wall-clock time of every Python stack py-spy saw, running or not",
}
NS = 1_000_000_000

# the frames analyse/flames.py (f"{state} wait") and analyse/sched.py (f"off-CPU ({state})")
# put above or below the thread's frame
_WAIT = re.compile(r"^(?P<v>[a-z]+) wait$")
_OFFCPU = re.compile(r"^off-CPU \((?P<v>[^()]*)\)$")


@dataclass(frozen=True)
class CaptureFacts:
    """What a profile says of its capture besides the analysis."""

    time_nanos: int = 0
    duration_nanos: int = 0
    pyspy_hz: float = 100.0
    perf_hz: float = 0.0
    main_binary: str = ""
    pid: int = 0


def capture_facts(bundle: Bundle) -> CaptureFacts:
    man = bundle.manifest
    try:
        started = int(datetime.fromisoformat(man.capture.started).timestamp() * NS)
    except (TypeError, ValueError):
        started = 0
    pyspy = bundle.collector("pyspy").details or {}
    perf = bundle.collector("perf").details or {}
    rate = float(man.capture.rate_hz or 100)
    return CaptureFacts(
        time_nanos=max(started, 0),
        duration_nanos=round((man.capture.duration_actual or 0) * NS),
        pyspy_hz=float(pyspy.get("rate_hz") or rate),
        perf_hz=float(perf.get("rate_hz") or rate),
        main_binary=man.target.exe.rsplit("/", 1)[-1],
        pid=man.target.pid,
    )


def thread_names(analysis: Analysis) -> dict[int, tuple[str, str]]:
    """tid -> (thread name, role) from the per-thread table (/proc); the kernel's name for
    threads Python did not name."""
    per = analysis.per_thread
    if per is None or per.empty:
        return {}
    out: dict[int, tuple[str, str]] = {}
    for tid, name, comm, role in zip(
        per["tid"], per["name"], per["comm"], per["role"], strict=True
    ):
        label = name if isinstance(name, str) and name else comm
        out[int(tid)] = (label if isinstance(label, str) else "", str(role or ""))
    return out


def split_stack(stack: Stack) -> tuple[int, str, list[tuple[str, str]], Stack]:
    """A flame stack -> (tid, thread name, labels of its leading non-code frames, code)."""
    tid, name, labels, i = -1, "", [], 0
    while i < min(len(stack), 2):
        f = stack[i]
        th = ThreadFrame.parse(f)
        if th is not None:
            tid, name = th.tid, th.name
        elif m := _WAIT.match(f):
            labels.append(("wait", m["v"]))
        elif m := _OFFCPU.match(f):
            labels.append(("thread_state", m["v"]))
        else:
            break
        i += 1
    return tid, name, labels, stack[i:]


Values = Callable[[float], tuple[int, ...]]


def _values(view: str, analysis: Analysis, facts: CaptureFacts) -> tuple[FlatProfile, Values]:
    """An empty profile of ``view`` with its value types, and the values of a weight."""
    perf = str(analysis.metrics.get("oncpu_source") or "").startswith("perf")
    if view == "cpu" and perf:  # a weight is a count of perf's cpu-clock samples
        period = round(NS / (facts.perf_hz or 100))
        types = (ValueType("samples", "count"), ValueType("cpu", "nanoseconds"))
        p = FlatProfile(view, types, "cpu", period_type=types[1], period=period)
        return p, lambda w: (round(w), round(w * period))
    if view in ("cpu", "wall"):  # seconds, from py-spy's samples
        vt = ValueType(view, "nanoseconds")
        p = FlatProfile(view, (vt,), view, period_type=vt, period=round(NS / facts.pyspy_hz))
        return p, lambda w: (round(w * NS),)
    name = "off_cpu" if view == "offcpu" else "wait"  # seconds measured, not sampled
    split = ("thread_state",) if view == "offcpu" else ("wait",)
    p = FlatProfile(view, (ValueType(name, "nanoseconds"),), name, split_labels=split)
    return p, lambda w: (round(w * NS),)


def view_profile(view: str, analysis: Analysis, facts: CaptureFacts) -> FlatProfile:
    """The flat profile of one of ``analysis.flames``."""
    profile, values = _values(view, analysis, facts)
    profile.time_nanos, profile.duration_nanos = facts.time_nanos, facts.duration_nanos
    profile.main_binary = facts.main_binary
    profile.comments = (f"diagnose: {ABOUT.get(view, view)}; pid {facts.pid}",)
    threads = thread_names(analysis)
    for stack, weight in analysis.flames.get(view, []):
        vals = values(weight)
        if not any(vals):
            continue
        tid, name, extra, code = split_stack(stack)
        known_name, role = threads.get(tid, ("", ""))
        labels = [("thread_id", str(tid)), ("thread_name", name or known_name)]
        if role:
            labels.append(("thread_role", role))
        stage = analysis.cpu_stages.get((tid, code)) if view == "cpu" else None
        if stage:
            labels.append(("stage", stage))
        profile.samples.append(FlatSample(tid, code, vals, tuple(labels + extra)))
    return profile


def build_profiles(analysis: Analysis, facts: CaptureFacts) -> dict[str, FlatProfile]:
    """One profile per flame view the analysis built (an absent view was not recorded)."""
    return {v: view_profile(v, analysis, facts) for v in VIEWS if v in analysis.flames}
