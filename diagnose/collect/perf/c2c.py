"""The ``c2c`` collector: cache lines that threads fight over (false sharing), perf c2c.

``perf c2c record`` samples loads and stores with their data addresses, which needs
hardware memory sampling (Intel PEBS load latency, AMD IBS, Arm SPE). Where the probe finds
none (this project's VMs) the collector is ``unavailable`` with the reason, and every c2c
metric stays null: the false-sharing rule is then "not evaluated", never guessed.

Recording is limited to :data:`MAX_SECONDS` of the window (memory sampling is the most
expensive of the perf collectors; its overhead could not be measured here, no PMU) and to
:data:`MAX_BYTES`. ``perf c2c report --stdio -c tid,iaddr`` is kept as
``c2c/report.txt`` and parsed into ``c2c/lines.json`` (:mod:`diagnose.formats.perf_c2c`).
"""

from __future__ import annotations

import math
import subprocess
from typing import Any

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.base import CaptureContext
from diagnose.collect.child import Child
from diagnose.collect.perf.record import PerfCollectorBase, record_failure
from diagnose.formats.perf_c2c import C2cFormatError, parse_c2c

MAX_SECONDS = 10.0
MAX_BYTES = 256 * 1024 * 1024
REPORT_TIMEOUT = 120.0


class C2cCollector(PerfCollectorBase):
    name = "c2c"
    description = "false sharing: contended cache lines with HITM counts (perf c2c; needs a PMU)"
    feature = "mem_sampling"
    data_rel = "c2c/.perf.data"

    def start(self, ctx: CaptureContext) -> None:
        seconds = max(1, math.ceil(min(ctx.remaining(), MAX_SECONDS)))
        argv = [
            self.perf, "c2c", "record", "-o", str(ctx.writer.path(self.data_rel)), "--",
            "--no-bpf-event", "-N", "-B", "-k", "CLOCK_MONOTONIC",
            "--max-size", f"{MAX_BYTES // 1024}K", "-p", str(ctx.target.pid), "sleep", str(seconds),
        ]  # fmt: skip
        self.child = Child(argv, ctx.writer.path("c2c/perf-record.stderr"), label="perf record c2c")

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        child = self.child
        assert child is not None
        if child.wait(timeout) is None:
            child.stop(grace=15)
        data = ctx.writer.path(self.data_rel)
        files = ["c2c/perf-record.stderr"]
        details: dict[str, Any] = {"max_seconds": MAX_SECONDS, "max_bytes": MAX_BYTES}
        try:
            if not ctx.writer.is_file(self.data_rel) or ctx.writer.size_of(self.data_rel) == 0:
                reason = record_failure(child.stderr_text()) or "perf c2c recorded nothing"
                return self.record(CollectorStatus.FAILED, reason, files, **details)
            report = ctx.writer.path("c2c/report.txt")
            rep_child = Child(
                [self.perf, "c2c", "report", "-i", str(data), "--stdio", "-c", "tid,iaddr",
                 "--full-symbols"],
                report,
                label="perf c2c report",
            )  # fmt: skip
            if rep_child.wait(REPORT_TIMEOUT) is None:
                rep_child.stop(grace=5)
            files.append("c2c/report.txt")
            text = ctx.writer.read_text("c2c/report.txt")
        except (OSError, subprocess.SubprocessError) as exc:
            return self.record(CollectorStatus.FAILED, f"perf c2c report: {exc}", files, **details)
        finally:
            ctx.writer.unlink(self.data_rel)
        try:
            parsed = parse_c2c(text)
        except C2cFormatError as exc:
            return self.record(CollectorStatus.FAILED, str(exc), files, **details)
        ctx.writer.write_json("c2c/lines.json", parsed.to_dict())
        files.append("c2c/lines.json")
        details.update(lines=len(parsed.lines), metric=parsed.metric)
        window = ctx.window()
        status = CollectorStatus.OK
        reason = ""
        if window > MAX_SECONDS + 1:
            status = CollectorStatus.PARTIAL
            reason = f"recorded the first {MAX_SECONDS:.0f} s of the {window:.0f} s window"
        return self.record(status, reason, files, **details)
