"""One verdict for a service of several workers, from each worker's own verdict.

Each worker of a pre-fork server is captured and judged on its own (collect/workers.py):
the GIL, a lock's futex address and the thread pools are per process. The service's verdict
weighs the workers by the CPU each used while captured, since a worker's bottleneck matters
as much as the work it does: the category with the most CPU behind it wins (a tie goes to
the busiest worker's category), and its confidence is the CPU-weighted mean of the
confidences of the workers that agree, the others counting as 0. Workers that disagree thus
lower the service's confidence, and the summary says which worker said what. A worker whose
capture failed is not judged and is named.

Workers unevenly loaded are said to be (:data:`UNEVEN_SHARE`): one worker doing most of the
service's CPU while the others idle is a capacity problem of its own, whatever the
verdict; a pre-fork server spreads new connections, and a client's keep-alive connection
stays with the worker that accepted it.

An idle worker (no CPU) weighs :data:`MIN_WEIGHT` cores: of two idle workers neither
outweighs the other, and a busy worker's verdict outweighs an idle one's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from diagnose.words import count

#: the weight, in cores, of a worker that used (almost) no CPU or whose CPU was not measured
MIN_WEIGHT = 0.01
#: one worker doing this share of the judged workers' CPU, with the service busy
#: (:data:`UNEVEN_MIN_CORES` in all), makes the workers unevenly loaded
UNEVEN_SHARE = 0.8
UNEVEN_MIN_CORES = 0.2


@dataclass(frozen=True)
class WorkerVerdict:
    """One worker's outcome: its verdict where its capture could be judged."""

    pid: int
    status: str  # ok | partial | failed
    primary: str | None = None
    kind: str | None = None
    confidence: float = 0.0
    cpu_cores: float | None = None
    reason: str = ""

    @property
    def judged(self) -> bool:
        return self.primary is not None

    def weight(self) -> float:
        return max(MIN_WEIGHT, self.cpu_cores or 0.0)


def service_verdict(workers: Sequence[WorkerVerdict]) -> dict[str, Any] | None:
    """The service's verdict over its workers (``workers[0]``: the busiest, diagnose's own
    capture); None when none was judged."""
    judged = [w for w in workers if w.judged]
    if not judged:
        return None
    weights: dict[str, float] = {}
    for w in judged:
        weights[str(w.primary)] = weights.get(str(w.primary), 0.0) + w.weight()
    first = str(judged[0].primary)
    top = max(weights, key=lambda c: (weights[c], c == first))
    total = sum(w.weight() for w in judged)
    agreeing = [w for w in judged if w.primary == top]
    confidence = sum(w.weight() * w.confidence for w in agreeing) / total
    heaviest = max(agreeing, key=lambda w: w.weight())
    busiest = max(judged, key=lambda w: w.weight())
    cores = sum(w.cpu_cores or 0.0 for w in judged)
    busiest_share = (busiest.cpu_cores or 0.0) / cores if cores > 0 else None
    uneven = (
        len(judged) > 1
        and cores >= UNEVEN_MIN_CORES
        and busiest_share is not None
        and busiest_share >= UNEVEN_SHARE
    )
    return {
        "primary": top,
        "kind": heaviest.kind,
        "confidence": round(confidence, 3),
        "agree": len(agreeing) == len(judged),
        "workers_judged": len(judged),
        "workers_agreeing": len(agreeing),
        "cpu_share_agreeing": round(sum(w.weight() for w in agreeing) / total, 3),
        "busiest_cpu_share": None if busiest_share is None else round(busiest_share, 3),
        "uneven": uneven,
        "uneven_text": (
            f"unevenly loaded: PID {busiest.pid} did {busiest_share:.0%} of the workers' CPU "
            "while the others waited; a pre-fork server spreads new connections, and a "
            "client's keep-alive connection stays with the worker that accepted it (more "
            "client connections, a shorter keep-alive, or SO_REUSEPORT, e.g. gunicorn "
            "--reuse-port, spread the load)"
            if uneven and busiest_share is not None
            else ""
        ),
        "summary": _summary(top, agreeing, judged, workers),
    }


def _summary(
    top: str,
    agreeing: Sequence[WorkerVerdict],
    judged: Sequence[WorkerVerdict],
    workers: Sequence[WorkerVerdict],
) -> str:
    cores = sum(w.cpu_cores or 0.0 for w in agreeing)
    all_cores = sum(w.cpu_cores or 0.0 for w in judged)
    text = f"{top} in {len(agreeing)} of {count(len(judged), 'worker')} judged"
    text += f" ({cores:.2f} of {all_cores:.2f} cores)"
    others = [w for w in judged if w.primary != top]
    if others:
        text += "; " + ", ".join(
            f"PID {w.pid}: {w.primary} ({w.cpu_cores or 0.0:.2f} cores)" for w in others
        )
    failed = [w for w in workers if not w.judged]
    if failed:
        text += "; not judged: " + ", ".join(
            f"PID {w.pid} ({w.reason or w.status})" for w in failed
        )
    return text


# --- a report's lead verdict, for whatever compares or lists reports ----------------------


def finding_site(finding: Mapping[str, Any]) -> str:
    """The code a finding names, from its evidence: the first ``*_site`` (or top function,
    top frame) it shows; "" when it names none."""
    for ev in finding.get("evidence") or []:
        name = str(ev.get("metric", ""))
        if name.endswith(("_site", "_top_function", "_top_frame")) and ev.get("display"):
            return str(ev["display"])
    return ""


def lead_verdict(report: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict a report leads with, for whatever compares or lists reports (compare,
    sweep): the service's where several workers were captured (its category, kind, title
    and confidence; its summary as the headline), else the process's."""
    v = dict(report.get("verdict") or {})
    service = report.get("service") or {}
    sv = service.get("verdict")
    if sv:
        n = len(service.get("workers") or [])
        v.update(
            primary=sv.get("primary"),
            kind=sv.get("kind"),
            title=sv.get("title"),
            confidence=sv.get("confidence"),
            headline=f"the service's {count(n, 'worker')}: {sv.get('summary')}",
        )
    return v
