"""From a table of steps to the knee, a band per step, the recommendations and the best setting.

Pure functions over :class:`StepPoint` rows, unit-tested on hand-built tables
(tests/unit/test_sweep_analysis.py). The method is the stepped load test of the seed
articles (docs/sweep.md): concurrency rises step by step; the knee is where QPS stops
growing while P99 bends upwards; the setting to serve at meets the P99 SLA; the safe
capacity of one instance is its stable QPS x 0.7 (30% headroom); replicas cover the peak,
plus one for failover.

The thresholds, and the principle each encodes:

- :data:`GAIN_SHARE` (0.25): going from concurrency c to c' "pays" when QPS rises by at least
  a quarter of the proportional gain (c'/c - 1). Doubling the clients for 10% more QPS does
  not pay: it buys latency (Little's law: latency = concurrency / QPS). A quarter, not a
  half, so that a host's run-to-run noise (+-15% here) cannot hide a real rise.
- :data:`P99_BEND_SHARE` (0.5): P99 "bends" across a step when it rises by at least half the
  proportional increase in concurrency.
- With a P99 SLA the setting to serve at is the stable step with the most QPS among those
  meeting it, the knee's other side included: the advice states that rule, so it follows it.
- :data:`ERROR_LIMIT` (1%): a step with more failed requests is not stable: it cannot be a
  setting to serve at, whatever its QPS.
- :data:`SAFE_FACTOR` (0.7): plan one instance for 70% of its stable QPS (30% headroom for
  bursts, slower production machines, longer inputs); :data:`CORE_THREADS` and
  :data:`MAX_THREADS`: a worker pool's core size at 70-80% of the concurrency to serve at,
  its maximum at 1.5-2x.
- :data:`NOISE` (15%): a setting "measurably beats" another only by more than the run-to-run
  noise of repeated measurements on a busy host (docs/playbook.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from diagnose.words import count

GAIN_SHARE = 0.25
P99_BEND_SHARE = 0.5
ERROR_LIMIT = 0.01
SAFE_FACTOR = 0.7
CORE_THREADS = (0.7, 0.8)
MAX_THREADS = (1.5, 2.0)
NOISE = 0.15


@dataclass(frozen=True)
class StepPoint:
    """One step as the analysis sees it. ``qps`` counts successful responses per second;
    ``None`` figures were not measured (a failed step has none)."""

    users: int
    qps: float | None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    error_rate: float = 0.0
    saturated: bool = False  # the load generator, not the service, was the limit
    failed: bool = False  # no figures: the generator or the capture failed

    @property
    def usable(self) -> bool:
        """Its QPS says something about the service."""
        return not self.failed and not self.saturated and self.qps is not None

    @property
    def stable(self) -> bool:
        """It could be served at: usable, errors within :data:`ERROR_LIMIT`, P99 measured."""
        return self.usable and self.error_rate <= ERROR_LIMIT and self.p99_ms is not None


def pays(qps_from: float, users_from: int, qps_to: float, users_to: int) -> bool:
    """Did raising the concurrency from ``users_from`` to ``users_to`` pay (GAIN_SHARE)?"""
    wanted = qps_from * (1 + GAIN_SHARE * (users_to / users_from - 1))
    return qps_to > wanted if qps_from > 0 else qps_to > 0


def p99_bends(p99_from: float, users_from: int, p99_to: float, users_to: int) -> bool:
    return p99_to >= p99_from * (1 + P99_BEND_SHARE * (users_to / users_from - 1))


def p99_change(ratio: float, digits: int = 1) -> str:
    """A P99 ratio by its direction: 'rose x2.1', 'fell to x0.5', 'held at x1.0' (a bare
    'went x0.5' reads as a worsening)."""
    shown = f"x{ratio:.{digits}f}"
    if shown == f"x{1:.{digits}f}":
        return f"held at {shown}"
    return f"rose {shown}" if ratio > 1 else f"fell to {shown}"


@dataclass(frozen=True)
class Knee:
    """``status``: ``found``; ``not_reached`` (QPS still grew at the last step);
    ``generator_bound`` (the load generator saturated before the service did);
    ``too_few_steps`` (fewer than two steps with figures)."""

    status: str
    text: str
    index: int | None = None  # into the steps given
    users: int | None = None
    qps: float | None = None
    p99_ms: float | None = None
    next_index: int | None = None  # the next usable step, the other side of the knee
    next_users: int | None = None
    qps_gain_after: float | None = None  # best later QPS / the knee's QPS
    p99_bend: float | None = None  # P99 at the next step / P99 at the knee
    p99_bends: bool | None = None

    @property
    def found(self) -> bool:
        return self.status == "found"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _f(x: float | None, digits: int = 0) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def users_text(n: int | None) -> str:
    """'1 user', '4 users'."""
    return count(n, "user")


def _knee_at(status: str, text: str, index: int, p: StepPoint) -> Knee:
    return Knee(status, text, index=index, users=p.users, qps=p.qps, p99_ms=p.p99_ms)


def _knee_not_passed(points: Sequence[StepPoint], knee: int, saturated: list[int]) -> Knee:
    """QPS still paid at the last usable step: the generator saturated after it, or the
    sweep did not go far enough."""
    pk = points[knee]
    sat_after = [i for i in saturated if i > knee]
    if sat_after:
        s = points[sat_after[0]]
        return _knee_at(
            "generator_bound",
            f"QPS still rose up to {users_text(pk.users)} ({_f(pk.qps)}/s), then the load "
            f"generator saturated (from {users_text(s.users)}): the service's knee is above "
            f"{_f(pk.qps)} QPS; give the generator more CPU (locust --processes, another "
            "host) and sweep again",
            knee,
            pk,
        )
    return _knee_at(
        "not_reached",
        f"QPS still rose at the last step ({users_text(pk.users)}, {_f(pk.qps)}/s): the knee "
        "is further up; add steps",
        knee,
        pk,
    )


def find_knee(points: Sequence[StepPoint]) -> Knee:
    """The knee: the first step that no later step beats by enough to pay (:func:`pays`).

    Steps whose generator saturated, and failed steps, are left out: their QPS is the load
    generator's limit, or nothing. The P99 across the knee is checked too: in a closed loop
    QPS that stops growing makes latency grow with the clients; when it does not, the
    requests were not all in flight (the generator or a client-side limit held them).
    """
    usable = [i for i, p in enumerate(points) if p.usable]
    saturated = [i for i, p in enumerate(points) if p.saturated]
    if len(usable) < 2:
        if saturated:
            first = points[saturated[0]]
            return Knee(
                "generator_bound",
                f"the load generator saturated from {users_text(first.users)}: too few steps with "
                "the service as the limit to find a knee",
            )
        return Knee("too_few_steps", "fewer than two steps have figures: no knee to find")
    knee = usable[-1]
    for pos, k in enumerate(usable):
        pk = points[k]
        later = usable[pos + 1 :]
        if not any(
            pays(pk.qps or 0.0, pk.users, points[j].qps or 0.0, points[j].users) for j in later
        ):
            knee = k
            break
    if knee == usable[-1]:
        return _knee_not_passed(points, knee, saturated)
    pk = points[knee]
    nxt = usable[usable.index(knee) + 1]
    pn = points[nxt]
    best_later = max(points[j].qps or 0.0 for j in usable if j > knee)
    gain = best_later / pk.qps if pk.qps else None
    bend = bends = None
    if pk.p99_ms and pn.p99_ms is not None:
        bend = pn.p99_ms / pk.p99_ms
        bends = p99_bends(pk.p99_ms, pk.users, pn.p99_ms, pn.users)
    text = (
        f"the knee is at {users_text(pk.users)}: {_f(pk.qps)} QPS"
        + (f", P99 {_f(pk.p99_ms)} ms" if pk.p99_ms is not None else "")
        + (
            f"; more users added at most {_f(((gain or 1) - 1) * 100)}% QPS"
            if (gain or 1) >= 1
            else f"; more users only lowered QPS (by {_f((1 - (gain or 1)) * 100)}% or more)"
        )
    )
    if bend is not None:
        text += f" while P99 {p99_change(bend)} at {users_text(pn.users)}"
    if knee == usable[0]:
        text += " (already at the first step: more concurrency never paid)"
    return Knee(
        "found",
        text,
        index=knee,
        users=pk.users,
        qps=pk.qps,
        p99_ms=pk.p99_ms,
        next_index=nxt,
        next_users=pn.users,
        qps_gain_after=None if gain is None else round(gain, 4),
        p99_bend=None if bend is None else round(bend, 4),
        p99_bends=bends,
    )


def bands(points: Sequence[StepPoint], knee: Knee) -> list[str]:
    """Each step's band: below, knee, past (the knee), saturated, errors or failed."""
    out = []
    for i, p in enumerate(points):
        if p.failed or p.qps is None:
            out.append("failed")
        elif p.saturated:
            out.append("saturated")
        elif p.error_rate > ERROR_LIMIT:
            out.append("errors")
        elif knee.index is None or knee.status != "found" or i < knee.index:
            out.append("below")
        elif i == knee.index:
            out.append("knee")
        else:
            out.append("past")
    return out


@dataclass(frozen=True)
class Recommendation:
    """What to configure, with the numbers behind it. ``basis``: ``sla`` (the most QPS
    within the P99 SLA), ``knee`` (the knee, no SLA given), or ``none`` (no stable step)."""

    basis: str
    text: list[str] = field(default_factory=list)
    index: int | None = None
    users: int | None = None
    qps: float | None = None  # the stable QPS of one instance at that setting
    p50_ms: float | None = None
    p99_ms: float | None = None
    sla_p99_ms: float | None = None
    sla_met: bool | None = None
    safe_qps: float | None = None
    core_threads: tuple[int, int] | None = None
    max_threads: tuple[int, int] | None = None
    queue_bound: int | None = None
    peak_qps: float | None = None
    replicas_for_peak: int | None = None
    replicas: int | None = None  # with one for failover

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: steps whose QPS is at least this share of the most are on one plateau (see _pick_sla)
PLATEAU = 0.98


def _pick_sla(points: Sequence[StepPoint], sla_p99_ms: float) -> tuple[int | None, list[str]]:
    """The most QPS among the stable steps meeting the SLA, exactly as the advice says it:
    a step past the knee that meets it with more QPS is the better setting."""
    stable = [i for i, p in enumerate(points) if p.stable]
    within = [i for i in stable if (points[i].p99_ms or 0.0) <= sla_p99_ms]
    if within:
        top = max(points[i].qps or 0.0 for i in within)
        # QPS within 2% of the most is one plateau (a step's noise): there the fewest
        # concurrent requests serve it at the lowest latency
        plateau = [i for i in within if (points[i].qps or 0.0) >= PLATEAU * top]
        return min(plateau, key=lambda i: points[i].users), []
    notes = []
    if stable:
        low = min(stable, key=lambda i: points[i].p99_ms or math.inf)
        notes.append(
            f"no stable step met P99 <= {_f(sla_p99_ms)} ms: the lowest P99 was "
            f"{_f(points[low].p99_ms)} ms at {users_text(points[low].users)}; the service cannot "
            "meet this SLA at any concurrency swept: make each request cheaper, or relax the SLA"
        )
    return None, notes


def _choose_step(
    points: Sequence[StepPoint], knee: Knee, sla_p99_ms: float | None
) -> tuple[int | None, list[str], str]:
    """The step to recommend, notes on the choice, and its basis (sla or knee)."""
    if sla_p99_ms is not None:
        chosen, notes = _pick_sla(points, sla_p99_ms)
        return chosen, notes, "sla"
    chosen = knee.index if knee.index is not None and points[knee.index].stable else None
    if chosen is None:
        stable = [i for i, p in enumerate(points) if p.stable]
        if stable:
            chosen = max(stable, key=lambda i: (points[i].qps or 0.0, -points[i].users))
    return chosen, [], "knee"


def _queue_bound(first: StepPoint | None, p: StepPoint, sla_p99_ms: float | None) -> int | None:
    """Requests to queue at most: the SLA's spare time over the P99 at step ``p``, in units
    of the first stable step's P50 (one request's own time), times the concurrency."""
    if sla_p99_ms is None or first is None or not first.p50_ms:
        return None
    spare = max(0.0, sla_p99_ms - (p.p99_ms or 0.0))
    return int(spare // first.p50_ms) * p.users


def _span(low_high: tuple[int, int]) -> str:
    low, high = low_high
    return str(low) if low == high else f"{low}-{high}"


def recommend(
    points: Sequence[StepPoint],
    knee: Knee,
    sla_p99_ms: float | None = None,
    peak_qps: float | None = None,
) -> Recommendation:
    """The concurrency to serve at (the knee, or the most QPS among the steps within the SLA),
    its worker pool, its bounded queue, the safe QPS per instance and the replicas for a peak."""
    chosen, notes, basis = _choose_step(points, knee, sla_p99_ms)
    if chosen is None:
        return Recommendation(
            "none",
            notes
            or [
                "no stable step (figures, errors <= 1%, generator not saturated): nothing to recommend"
            ],
            sla_p99_ms=sla_p99_ms,
            sla_met=False if sla_p99_ms is not None else None,
            peak_qps=peak_qps,
        )
    p = points[chosen]
    qps = p.qps or 0.0
    users = p.users
    safe = round(qps * SAFE_FACTOR, 2)
    core = (max(1, round(users * CORE_THREADS[0])), max(1, round(users * CORE_THREADS[1])))
    most = (max(1, math.ceil(users * MAX_THREADS[0])), max(1, math.ceil(users * MAX_THREADS[1])))
    first = next((q for q in points if q.stable and q.p50_ms), None)
    queue = _queue_bound(first, p, sla_p99_ms)
    text = []
    why = (
        f"the most QPS with P99 <= {_f(sla_p99_ms)} ms"
        if basis == "sla"
        else ("the knee" if chosen == knee.index else "the best stable step")
    )
    text.append(
        f"serve at {users} concurrent request{'' if users == 1 else 's'} ({why}): {_f(qps, 1)} QPS, "
        f"P99 {_f(p.p99_ms)} ms per instance"
    )
    text.append(
        f"worker pool: {_span(core)} core threads (70-80% of {users}), at most {_span(most)} (1.5-2x)"
    )
    if queue is not None and first is not None:
        text.append(
            f"bounded queue: about {queue} requests ((SLA {_f(sla_p99_ms)} ms - P99 "
            f"{_f(p.p99_ms)} ms) / {_f(first.p50_ms, 1)} ms per request x {users}); reject "
            "beyond it (429/503) rather than queue forever"
        )
    text.append(
        f"safe capacity per instance: {_f(safe, 1)} QPS (stable {_f(qps, 1)} x {SAFE_FACTOR}: "
        "30% headroom)"
    )
    replicas_for_peak = replicas = None
    if peak_qps is not None and safe > 0:
        replicas_for_peak = max(1, math.ceil(peak_qps / safe - 1e-9))
        replicas = replicas_for_peak + 1
        text.append(
            f"for a peak of {_f(peak_qps)} QPS: {replicas} instances ({replicas_for_peak} for "
            f"the peak at {_f(safe, 1)} QPS each, plus 1 for failover)"
        )
    return Recommendation(
        basis,
        notes + text,
        index=chosen,
        users=users,
        qps=qps,
        p50_ms=p.p50_ms,
        p99_ms=p.p99_ms,
        sla_p99_ms=sla_p99_ms,
        sla_met=None if sla_p99_ms is None else True,
        safe_qps=safe,
        core_threads=core,
        max_threads=most,
        queue_bound=queue,
        peak_qps=peak_qps,
        replicas_for_peak=replicas_for_peak,
        replicas=replicas,
    )


@dataclass(frozen=True)
class SettingOutcome:
    name: str
    knee: Knee
    recommendation: Recommendation


def best_setting(outcomes: Sequence[SettingOutcome]) -> dict[str, Any]:
    """The seeds' "best thread configuration": the setting whose recommendation serves the
    most QPS (within the SLA when one was given); within :data:`NOISE` of each other, the
    lower P99 wins. The first setting is the baseline the best one is measured against."""
    rows: list[dict[str, Any]] = []
    for i, o in enumerate(outcomes):
        rec = o.recommendation
        rows.append(
            {
                "setting": o.name,
                "baseline": i == 0,
                "knee_users": o.knee.users if o.knee.found else None,
                "knee_status": o.knee.status,
                "users": rec.users,
                "qps": rec.qps,
                "p99_ms": rec.p99_ms,
                "safe_qps": rec.safe_qps,
                "basis": rec.basis,
            }
        )
    scored = [i for i, r in enumerate(rows) if r["qps"] is not None]
    if not scored:
        return {
            "rows": rows,
            "best": None,
            "beats_baseline": None,
            "text": "no setting had a stable step",
        }
    top = max(rows[i]["qps"] for i in scored)
    close = [i for i in scored if rows[i]["qps"] >= top * (1 - NOISE)]
    best = min(close, key=lambda i: (rows[i]["p99_ms"] or math.inf, -rows[i]["qps"]))
    b, base = rows[best], rows[0]
    for i, r in enumerate(rows):
        r["best"] = i == best
    if best == 0 or base["qps"] is None:
        beats = None if base["qps"] is None else False
        text = (
            f"{b['setting']} is best: {_f(b['qps'], 1)} QPS at {users_text(b['users'])}, "
            f"P99 {_f(b['p99_ms'])} ms"
            + ("" if best != 0 or len(rows) == 1 else "; no other setting beat it beyond the noise")
        )
        return {"rows": rows, "best": best, "beats_baseline": beats, "text": text}
    qps_ratio = b["qps"] / base["qps"] if base["qps"] else math.inf
    p99_ratio = b["p99_ms"] / base["p99_ms"] if b["p99_ms"] is not None and base["p99_ms"] else None
    beats = qps_ratio > 1 + NOISE or (p99_ratio is not None and p99_ratio < 1 - NOISE)
    text = (
        f"{b['setting']} is best: {_f(b['qps'], 1)} QPS at {users_text(b['users'])}, P99 "
        f"{_f(b['p99_ms'])} ms, against {_f(base['qps'], 1)} QPS, P99 {_f(base['p99_ms'])} ms "
        f"for {base['setting']} (the baseline): "
        + (f"x{qps_ratio:.2f} QPS" if math.isfinite(qps_ratio) else "QPS where it had none")
        + ("" if p99_ratio is None else f", x{p99_ratio:.2f} P99")
        + ("" if beats else " (within the noise: not a measured improvement)")
    )
    return {"rows": rows, "best": best, "beats_baseline": beats, "text": text}
