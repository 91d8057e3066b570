"""What a comparison says about the service itself: its own figures, the verdict change in
words, and which way the internal metrics moved *given* the outcome.

A fix is made for the service's throughput and latency; the internal metrics explain why
they moved. Read alone, they mislead after a real improvement: once the lock is gone, the
time threads spent waiting on it goes to the next state (running, queueing for a core, the
GIL), and a service that answers six times as many requests switches and migrates more per
second. So :func:`judge_in_context` re-reads each metric that moved the wrong way:

1. **Rates per second are judged per request** when both throughputs are known: more
   context switches per second while serving more requests is not worse, more per request is.
2. **Shares of busy time are a partition** (they sum to 1): when waiting on the old
   bottleneck fell by F points, other waiting states may rise by up to F points in all
   without anything getting worse; such a rise is ``moved`` ("the time freed goes here").
3. **When the service's own figures improved** (faster or more throughput, nothing of its
   own worse) and the metric measures pressure from the work done (threads queueing, waits,
   switches: not memory growth or cache-line sharing), a wrong-way move is ``moved``: the
   pressure followed the extra work, and shows where the next limit is. A rate judged per
   request under rule 1 is already net of the extra work: worse per request stays worse.

Nothing is excused when the service's figures got worse; rule 3 only when they improved
(not when mixed, nor without them: compare then says that the internal metrics alone cannot
tell an improvement from a regression).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from diagnose.verdict.service import lead_verdict
from diagnose.verdict.template import format_value

#: The service's figures compare reads, in the order shown: key, label, unit, better.
FIGURES: tuple[tuple[str, str, str, str], ...] = (
    ("qps", "throughput", "req/s", "higher"),
    ("p50_ms", "p50", "ms", "lower"),
    ("p95_ms", "p95", "ms", "lower"),
    ("p99_ms", "p99", "ms", "lower"),
    ("mean_ms", "mean", "ms", "lower"),
    ("error_rate", "errors", "share", "lower"),
)
#: Noise of the service's figures: two runs of one unchanged service differ by up to this
#: much (docs/playbook.md measured +-15% for throughput here); errors by 1 point.
FIGURE_NOISE = 0.15
ERROR_NOISE = 0.01

#: Rule 3 never excuses metrics of these units: memory growth and shared cache lines do not
#: follow the work done per second.
NOT_LOAD_PRESSURE = frozenset({"MiB/min", "lines"})
#: The partition of busy time (rule 2); the other ``busy_share_*`` are waiting states.
BUSY_RUNNING = "busy_share_running"

#: The outcome in words, as the terminal and the reports say it.
OUTCOME_WORDS = {
    "improved": "improved",
    "regressed": "got worse",
    "mixed": "mixed (some figures better, some worse)",
    "same": "the same within the noise",
}

#: The bottleneck in words: what is gone, and what the service is now.
GONE = {
    "lock": "the lock contention",
    "scheduling": "the queueing for CPUs",
    "compute": "the compute limit",
    "memory_bandwidth": "the memory-bandwidth limit",
    "preprocess": "the preprocessing bottleneck",
    "io": "the waiting on I/O",
    "idle": "the idleness",
    "unknown": "the unclear picture",
}
NOW = {
    "lock": "lock-bound",
    "scheduling": "short of CPUs (threads queue for a core)",
    "compute": "compute-bound",
    "memory_bandwidth": "memory-bandwidth-bound",
    "preprocess": "preprocessing-bound",
    "io": "waiting on I/O",
    "idle": "idle (no load reached it during the capture)",
    "unknown": "without a clear bottleneck",
}


# --- the service's own figures -------------------------------------------------------------


def figures(
    *,
    source: str,
    qps: float | None = None,
    requests: float | None = None,
    failures: float | None = None,
    seconds: float | None = None,
    **latency: float | None,
) -> dict[str, Any]:
    """One side's figures as compare shows them. ``qps`` counts successful responses; when
    not given it is (requests - failures) / seconds."""
    if qps is None and requests is not None and seconds:
        qps = max(0.0, requests - (failures or 0)) / seconds
    out: dict[str, Any] = {"source": source, "qps": None if qps is None else round(qps, 3)}
    for key in ("p50_ms", "p95_ms", "p99_ms", "mean_ms"):
        v = latency.get(key)
        out[key] = None if v is None else round(float(v), 3)
    out["error_rate"] = round(failures / requests, 4) if requests and failures is not None else None
    out["requests"] = None if requests is None else int(requests)
    return out


def from_load(load: Mapping[str, Any], source: str) -> dict[str, Any]:
    """From a load generator's figures (:class:`diagnose.sweep.loadgen.LoadFigures` as a dict)."""
    return figures(
        source=source,
        requests=load.get("requests"),
        failures=load.get("failures"),
        seconds=load.get("seconds"),
        **{k: load.get(k) for k in ("p50_ms", "p95_ms", "p99_ms", "mean_ms")},
    )


def _number(v: float, unit: str) -> str:
    if unit == "share":
        return f"{v:.1%}"
    text = f"{v:,.0f}" if abs(v) >= 1000 else format_value(round(v, 3 if abs(v) < 1 else 1))
    return f"{text} {unit}"


def figure_row(
    key: str, label: str, unit: str, better: str, before: float | None, after: float | None
) -> dict[str, Any]:
    row: dict[str, Any] = {"name": key, "label": label, "unit": unit, "direction": better,
                           "before": before, "after": after, "change": "same",
                           "display_before": "—" if before is None else _number(before, unit),
                           "display_after": "—" if after is None else _number(after, unit),
                           "display_delta": "", "relative": None}  # fmt: skip
    if before is None or after is None:
        row["change"] = "not measured"
        return row
    delta = after - before
    if unit == "share":
        band = ERROR_NOISE
        row["display_delta"] = f"{delta * 100:+.1f} pts"
    else:
        band = max(FIGURE_NOISE * max(abs(before), abs(after)), 1e-9)
        row["relative"] = round(delta / before, 4) if before else None
        row["display_delta"] = f"{after / before:.2f}x" if before else ""
    if abs(delta) >= band:
        row["change"] = "better" if (delta < 0) == (better == "lower") else "worse"
    return row


def service_change(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The service's figures side by side, each judged, and the outcome: ``improved`` (some
    better, none worse), ``regressed``, ``mixed``, ``same``, or None (not known both sides)."""
    out: dict[str, Any] = {"before": before, "after": after, "rows": [], "outcome": None}
    if before is None or after is None:
        which = "either capture" if before is None and after is None else (
            "the before capture" if before is None else "the after capture"
        )  # fmt: skip
        out["text"] = (
            f"no throughput or latency figures for {which}: the internal metrics alone cannot "
            "tell an improvement from a regression"
        )
        return out
    rows = [figure_row(k, lbl, u, b, before.get(k), after.get(k)) for k, lbl, u, b in FIGURES]
    # not measured on either side, or no errors on either: nothing to show
    rows = [r for r in rows if (r["before"], r["after"]) not in ((None, None), (0, 0))]
    judged = {r["change"] for r in rows}
    if "better" in judged:
        outcome = "mixed" if "worse" in judged else "improved"
    else:
        outcome = "regressed" if "worse" in judged else "same"
    moved = [r for r in rows if r["change"] in ("better", "worse")]
    detail = "; ".join(
        f"{r['label']} {r['display_before']} → {r['display_after']}" for r in moved[:4]
    )
    words = OUTCOME_WORDS[outcome]
    out.update(rows=rows, outcome=outcome, text=f"{words}: {detail}" if detail else words)
    return out


# --- the verdict change in words ----------------------------------------------------------


def _primary_finding(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    primary = lead_verdict(report).get("primary")
    return next(
        (f for f in report.get("findings", [])
         if f.get("category") == primary and not f.get("advisory")),
        None,
    )  # fmt: skip


def verdict_words(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """'the lock contention is gone; now compute-bound', from both reports."""
    pb = str(lead_verdict(before).get("primary") or "unknown")
    pa = str(lead_verdict(after).get("primary") or "unknown")
    now = NOW.get(pa, pa)
    if pb == pa:
        fb, fa = _primary_finding(before), _primary_finding(after)
        if fb and fa and fa["score"] < fb["score"] - 0.1:
            return f"still {now}, less so (score {fb['score']:.2f} → {fa['score']:.2f})"
        if fb and fa and fa["score"] > fb["score"] + 0.1:
            return f"still {now}, more so (score {fb['score']:.2f} → {fa['score']:.2f})"
        return f"still {now}"
    gone = GONE.get(pb, pb)
    fb = _primary_finding(before)
    stayed = fb and any(f["id"] == fb["id"] for f in after.get("findings", []))
    if fb is None or pb in ("unknown", "idle"):
        return f"was {NOW.get(pb, pb)}; now {now}"
    if stayed:
        score = next(f["score"] for f in after["findings"] if f["id"] == fb["id"])
        return (
            f"{gone} is no longer the main limit (score {fb['score']:.2f} → {score:.2f}); now {now}"
        )
    return f"{gone} is gone; now {now}"


# --- which way the metrics moved, given the outcome ----------------------------------------


def _rejudge(row: dict[str, Any], why: str) -> None:
    row["change"] = "moved"
    row["why"] = why


def _per_request(row: dict[str, Any], qps_b: float, qps_a: float, band: float) -> None:
    b, a = float(row["before"]) / qps_b, float(row["after"]) / qps_a
    row["per_request"] = {"before": round(b, 6), "after": round(a, 6)}
    row["display_per_request"] = f"{format_value(round(b, 3))} → {format_value(round(a, 3))}"
    if abs(a - b) < band * max(abs(a), abs(b), 1e-12):
        row["change"] = "same"
    else:
        row["change"] = "better" if (a < b) == (row["direction"] == "lower") else "worse"
    row["why"] = "judged per request: the service answered a different number per second"


def judge_in_context(
    rows: Sequence[dict[str, Any]], service: Mapping[str, Any], relative_noise: float
) -> None:
    """Re-read, in place, the metrics that moved the wrong way (module docstring, rules 1-3)."""
    before, after = service.get("before") or {}, service.get("after") or {}
    qps_b, qps_a = before.get("qps"), after.get("qps")
    outcome = service.get("outcome")
    if qps_b and qps_a:  # rule 1: a rate that moved beyond its noise, either way
        for row in rows:
            if row["unit"] == "1/s" and row["change"] in ("better", "worse"):
                _per_request(row, float(qps_b), float(qps_a), relative_noise)
    if outcome == "regressed":
        return
    shares = [r for r in rows if r["name"].startswith("busy_share_") and r["name"] != BUSY_RUNNING]
    freed = sum(-r["delta"] for r in shares if r["change"] == "better")
    left = freed
    for row in sorted(shares, key=lambda r: r["delta"] or 0.0):  # rule 2
        if row["change"] == "worse" and row["delta"] <= left + 1e-9:
            left -= row["delta"]
            fell = ", ".join(r["name"] for r in shares if r["change"] == "better")
            _rejudge(row, f"busy time freed from {fell} ({freed * 100:.0f} pts) goes here")
    if outcome != "improved":
        return
    best = next(r for r in service["rows"] if r["change"] == "better")
    why = (
        f"the service improved ({best['label']} {best['display_before']} → "
        f"{best['display_after']}): pressure that follows the work it now does, "
        "where the next limit shows"
    )
    for row in rows:  # rule 3; a rate judged per request is already net of the extra work
        if (
            row["change"] == "worse"
            and row["unit"] not in NOT_LOAD_PRESSURE
            and row["per_request"] is None
        ):
            _rejudge(row, why)
