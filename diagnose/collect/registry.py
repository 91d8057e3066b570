"""The collectors diagnose knows, in the order they start."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from diagnose.collect.base import Collector
from diagnose.collect.perf.c2c import C2cCollector
from diagnose.collect.perf.false_sharing import FalseSharingCollector
from diagnose.collect.perf.oncpu import PerfCollector
from diagnose.collect.perf.sched import PerfSchedCollector
from diagnose.collect.perf.stat import PerfStatCollector
from diagnose.collect.proc_sampler import ProcSampler
from diagnose.collect.pyspy import GilCollector, PySpyCollector
from diagnose.collect.system import SystemSnapshot
from diagnose.errors import UsageError

#: name -> factory. Order matters: the system snapshot first (it is instant), then the
#: samplers. ``DEFAULT_OFF`` ones run only when asked for with --collectors.
COLLECTORS: dict[str, Callable[[], Collector]] = {
    "system": SystemSnapshot,
    "proc": ProcSampler,
    "pyspy": PySpyCollector,
    "gil": GilCollector,
    "perf": PerfCollector,
    "perf_sched": PerfSchedCollector,
    "perf_stat": PerfStatCollector,
    "c2c": C2cCollector,
    "false_sharing": FalseSharingCollector,
}
#: ``false_sharing`` is opt-in (``--false-sharing``) until its cost is measured small on
#: real services (docs/performance.md).
DEFAULT_OFF: frozenset[str] = frozenset({"false_sharing"})
ALWAYS: frozenset[str] = frozenset({"system"})


def describe() -> list[tuple[str, str]]:
    return [(name, factory().description) for name, factory in COLLECTORS.items()]


def with_collector(names: tuple[str, ...] | None, name: str) -> tuple[str, ...]:
    """``names`` (None: the default set) plus ``name``: an opt-in collector asked for by flag."""
    base = names if names is not None else tuple(n for n in COLLECTORS if n not in DEFAULT_OFF)
    return base if name in base else (*base, name)


def parse_collectors(text: str | None) -> tuple[str, ...] | None:
    """``"proc,pyspy"`` -> ("proc", "pyspy"); unknown names are a usage error."""
    if text is None or text.strip() in ("", "default"):
        return None
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if names == ("all",):
        return tuple(COLLECTORS)
    unknown = [n for n in names if n not in COLLECTORS]
    if unknown:
        raise UsageError(
            f"unknown collector(s): {', '.join(unknown)}; known: {', '.join(COLLECTORS)}"
        )
    return names


def build_collectors(names: Sequence[str] | None) -> list[Collector]:
    if names is None:
        chosen = [n for n in COLLECTORS if n not in DEFAULT_OFF]
    else:
        chosen = [n for n in COLLECTORS if n in names or n in ALWAYS]
    return [COLLECTORS[n]() for n in chosen]
