"""The ``perf_stat`` collector: hardware counters of the target (IPC, last-level cache misses).

``perf stat -x, -e cycles,instructions,cache-references,cache-misses -p PID`` for the
window: counting, not sampling, so its cost is a few counter reads. Needs a hardware PMU;
where the probe finds none (this project's VMs: "<not supported>") the collector is
``unavailable`` and IPC stays null. The CSV is kept as ``native/perf-stat.csv``.
"""

from __future__ import annotations

import math

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.base import CaptureContext
from diagnose.collect.child import Child
from diagnose.collect.perf.record import PerfCollectorBase, record_failure
from diagnose.formats.perf_stat import parse_stat

EVENTS = ("cycles", "instructions", "cache-references", "cache-misses")
OUT = "native/perf-stat.csv"


class PerfStatCollector(PerfCollectorBase):
    name = "perf_stat"
    description = "hardware counters: IPC, cache misses (perf stat; needs a PMU)"
    feature = "hw_events"

    def start(self, ctx: CaptureContext) -> None:
        seconds = max(1, math.ceil(ctx.remaining()) + 2)
        argv = [self.perf, "stat", "-x", ",", "-e", ",".join(EVENTS),
                "-p", str(ctx.target.pid), "--", "sleep", str(seconds)]  # fmt: skip
        # perf stat writes its CSV to stderr
        self.child = Child(argv, ctx.writer.path(OUT), label="perf stat")

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        child = self.child
        assert child is not None
        if child.wait(timeout) is None:
            child.stop(grace=10)
        text = child.stderr_text()
        counters = {c.event.split(":")[0]: c for c in parse_stat(text)}
        counted = {e: c.value for e, c in counters.items() if c.value is not None}
        details = {"events": list(EVENTS), "counted": sorted(counted)}
        if not counted:
            reason = record_failure(text) or "perf stat counted nothing"
            return self.record(CollectorStatus.FAILED, reason, [OUT], **details)
        missing = [e for e in EVENTS if e not in counted]
        if missing:
            return self.record(
                CollectorStatus.PARTIAL, f"not counted: {', '.join(missing)}", [OUT], **details
            )
        return self.record(CollectorStatus.OK, "", [OUT], **details)
