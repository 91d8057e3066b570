"""The manifest's sections as frozen records: the target, the host and the capture.

These cross every boundary of the package (the capture writes them, the analysis and the
renderers read them), so they are typed: a reader gets ``manifest.target.is_python``, not a
``dict.get`` with its own default. Each section reads what a bundle of any version holds:

- a field that is absent takes its default (older bundles lack newer fields);
- a field diagnose does not know (a newer version's, or a benchmark's annotation) is kept in
  ``extra`` and written back, so nothing read is lost;
- types were checked before (:mod:`diagnose.bundle.schema`): ``from_dict`` only shapes.

A section changes by replacement (:func:`dataclasses.replace`), as the capture goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


def _known(cls: type, data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``data`` split into the fields of ``cls`` (lists as tuples) and the rest."""
    names = {f.name for f in fields(cls)} - {"extra"}
    known = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
    return known, {k: v for k, v in data.items() if k not in names}


def _as_dict(section: Any, optional: frozenset[str]) -> dict[str, Any]:
    """The section as JSON: fields in declaration order, then ``extra``; a field named in
    ``optional`` is left out while it has its default (as bundles have always done)."""
    out: dict[str, Any] = {}
    for f in fields(section):
        if f.name == "extra":
            continue
        value = getattr(section, f.name)
        if f.name in optional and value == f.default:
            continue
        if isinstance(value, tuple):
            value = [v.to_dict() if isinstance(v, LeftOut) else v for v in value]
        elif isinstance(value, Mapping):
            value = dict(value)
        out[f.name] = value
    out.update(section.extra)
    return out


@dataclass(frozen=True)
class LeftOut:
    """A process of the service that was not captured, and why (shown to people)."""

    pid: int
    comm: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "comm": self.comm, "why": self.why}


@dataclass(frozen=True)
class TargetInfo:
    """The process captured, and how it was chosen among the service's processes."""

    pid: int = 0
    comm: str = ""
    exe: str = ""
    cmdline: tuple[str, ...] = ()  # redacted
    is_python: bool = False
    python_version: str | None = None
    followed_from: int | None = None  # the PID given, when diagnose followed it to a worker
    siblings: tuple[int, ...] = ()  # the service's other processes
    note: str = ""
    selection: str = ""  # how the service's processes were found, when there was a choice
    left_out: tuple[LeftOut, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"selection", "left_out"})

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, self.OPTIONAL)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetInfo:
        known, extra = _known(cls, data)
        known["left_out"] = tuple(
            LeftOut(int(x.get("pid", 0)), str(x.get("comm", "")), str(x.get("why", "")))
            for x in known.get("left_out", ())
        )
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class HostInfo:
    """The machine recorded on: the analysis reads system-call numbers by ``machine``."""

    hostname: str = ""
    logical_cpus: int | None = None
    machine: str = ""  # ``uname -m``; absent in bundles written before it
    extra: Mapping[str, Any] = field(default_factory=dict)

    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"machine"})

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, self.OPTIONAL)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostInfo:
        known, extra = _known(cls, data)
        return cls(**known, extra=extra)


@dataclass(frozen=True)
class CaptureInfo:
    """When and how the capture ran (docs/bundle.md, "manifest.json"). Times are seconds;
    ``window_start_s`` and ``duration_actual`` delimit the measured window."""

    started: str = ""
    monotonic_start: float = 0.0
    duration_requested: float = 0.0
    rate_hz: float | None = None
    proc_rate_hz: float | None = None
    py_spy_mode: str = ""
    command: tuple[str, ...] = ()  # redacted
    collectors_requested: tuple[str, ...] | None = None  # None: the defaults
    running: tuple[str, ...] = ()  # while capturing: the collectors recording
    window_start_s: float = 0.0  # bundles from before the window waited for collectors: 0
    ended: str | None = None  # None until the capture ended
    duration_actual: float | None = None
    finish_s: float | None = None
    ended_by: str | None = None  # duration | target_exited | disk_full | interrupted (...)
    safety_note: str = ""
    run: Mapping[str, Any] | None = None  # diagnose run: the command and how it exited
    # diagnose's CPU budget and the samplers' rates it chose (collect/budget.py Plan.to_dict)
    cpu_budget: Mapping[str, Any] | None = None
    # the tables rewritten as Parquet once captured, and those kept CSV (bundle/columnar.py)
    tables: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {
            "rate_hz",
            "proc_rate_hz",
            "py_spy_mode",
            "running",
            "window_start_s",
            "ended",
            "duration_actual",
            "finish_s",
            "ended_by",
            "safety_note",
            "run",
            "cpu_budget",
            "tables",
        }
    )

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, self.OPTIONAL)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaptureInfo:
        known, extra = _known(cls, data)
        return cls(**known, extra=extra)

    @property
    def interrupted(self) -> bool:
        return str(self.ended_by or "").startswith("interrupted")
