"""Latency drift: is this capture's P99 more than ``--drift`` above the service's usual one?

The baseline is the median of the readings the store holds from the last day (before this
capture): a median, so that one slow capture among them does not move it, and a day, so
that it follows a slow change of traffic but not an incident. With fewer than
:data:`MIN_READINGS` readings there is no baseline, and no drift is judged.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from diagnose.errors import UsageError

#: readings a baseline needs: the median of one or two would be one capture's luck
MIN_READINGS = 3
#: how far back the baseline's readings go
BASELINE_WINDOW_S = 86400.0
#: ``--drift``'s default: a rise of more than 20% over the baseline
DEFAULT_DRIFT = 0.2
#: a rise of exactly ``--drift`` (within float rounding) is not more than it
_EPSILON = 1e-9


def baseline(readings: Sequence[float]) -> float | None:
    """The median of ``readings`` (ms), or None with fewer than :data:`MIN_READINGS`."""
    return statistics.median(readings) if len(readings) >= MIN_READINGS else None


@dataclass(frozen=True)
class Drift:
    """One capture's P99 against the baseline."""

    p99_ms: float
    baseline_ms: float | None  # None: too few readings (``readings``)
    readings: int  # readings in the baseline's window, this capture's not counted
    limit: float  # --drift, as a fraction (0.2: 20%)

    @property
    def rise(self) -> float | None:
        """(P99 - baseline) / baseline; None without a (positive) baseline."""
        if self.baseline_ms is None or self.baseline_ms <= 0:
            return None
        return (self.p99_ms - self.baseline_ms) / self.baseline_ms

    @property
    def drifted(self) -> bool:
        rise = self.rise
        return rise is not None and rise > self.limit + _EPSILON


def judge(p99_ms: float, readings: Sequence[float], limit: float = DEFAULT_DRIFT) -> Drift:
    """``p99_ms`` against the median of ``readings`` (the last day's, before it)."""
    return Drift(p99_ms, baseline(readings), len(readings), limit)


def parse_drift(text: str) -> float:
    """``--drift``: a percentage (``20%`` or ``20``) -> a fraction (0.2)."""
    try:
        pct = float(text.strip().removesuffix("%"))
    except ValueError:
        pct = float("nan")
    if not (0 < pct <= 1000):
        raise UsageError(f"--drift takes a percentage above 0, such as 20%, not {text!r}")
    return pct / 100.0


def _ms(v: float) -> str:
    return f"{v:.0f} ms" if v >= 100 else f"{v:.1f} ms" if v >= 10 else f"{v:.2f} ms"


def latency_words(
    p99_ms: float | None, baseline_ms: float | None, drifted: bool, compared_with: int | None
) -> str:
    """What a capture's row says of the service's P99, for the terminal and history:
    'drift: P99 80.2 ms vs baseline 5.10 ms (+1473%), compared with capture 3'."""
    if p99_ms is None:
        return ""
    if baseline_ms is None:
        return f"P99 {_ms(p99_ms)}, no baseline (fewer than {MIN_READINGS} readings in a day)"
    rise = Drift(p99_ms, baseline_ms, MIN_READINGS, 0.0).rise
    text = f"P99 {_ms(p99_ms)} vs baseline {_ms(baseline_ms)}"
    text += "" if rise is None else f" ({rise:+.0%})"
    if not drifted:
        return text
    if compared_with is None:
        return f"drift: {text}, not compared"
    return f"drift: {text}, compared with capture {compared_with}"
