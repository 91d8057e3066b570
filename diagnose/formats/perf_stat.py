"""``perf stat -x,`` (CSV) output -> counters.

One line per event: ``value,unit,event,run_time,run_percent,metric_value,metric_unit``,
where ``value`` is ``<not supported>`` or ``<not counted>`` when the event could not be
counted (no PMU, multiplexed away). Comment lines (``#``) and blank lines are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Counter:
    event: str
    value: float | None  # None: not counted
    unit: str
    status: str  # "counted", "not supported", "not counted"
    running_pct: float | None  # share of the time the counter ran (multiplexing)


def parse_stat(text: str) -> Iterator[Counter]:
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(",")
        if len(parts) < 3 or not parts[2]:
            continue
        raw, unit, event = parts[0], parts[1], parts[2]
        pct: float | None = None
        if len(parts) > 4:
            try:
                pct = float(parts[4])
            except ValueError:
                pct = None
        if raw.startswith("<"):
            status = raw.strip("<>")
            yield Counter(event, None, unit, status, pct)
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        yield Counter(event, value, unit, "counted", pct)
