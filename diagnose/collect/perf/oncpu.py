"""The ``perf`` collector: native on-CPU stacks of every thread of the target.

``perf record -e cpu-clock -F RATE --call-graph fp -a -C CPUS``, read back with
``perf script --pid PID``. Why these choices:

- CPU-wide (``-a -C``: the CPUs the target may run on, at most 16), where diagnose may
  (CAP_PERFMON or CAP_SYS_ADMIN, or ``perf_event_paranoid`` <= 0), not the target's threads
  (``-p PID``, the fallback): per-thread events are switched in and out with every context
  switch of the target's threads, a cost the target pays (``-p`` cost a 4-thread service
  2.4% of its throughput, ``-a`` 0.3%: docs/performance.md). Threads the target starts
  during the capture are sampled too, and no event of an exited thread is left to poll (perf 6.1's
  busy loop, collect/perf/record.py). The recording also holds what else ran on those CPUs;
  it is read back for the target's PID alone and deleted once converted (a capture killed
  before that leaves it in the bundle, which only its owner may read);

- ``cpu-clock`` everywhere, also where a PMU exists: a software timer present on every
  host, each sample is the same slice of CPU time (so shares are time shares, and bundles
  from different hosts compare); hardware counters are the ``perf_stat`` collector's job.
- frame-pointer call graphs, not DWARF (:mod:`diagnose.collect.perf` says why): DWARF
  still stopped inside NumPy's ufunc loops, while py-spy supplies the Python frames above
  the native ones anyway. With frame pointers the BLAS kernel itself
  (``sgemm_kernel_SKYLAKEX``) is the leaf of every sample, which is what the on-CPU
  categories need.

Writes ``native/samples.csv`` (``t,tid,stack_id``), ``native/stacks.csv`` (frames root
first, ``symbol (library)``), ``native/stacks.folded`` and ``native/native.speedscope.json``.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.bundle.writer import guarded_csv_writer
from diagnose.collect.base import CaptureContext
from diagnose.collect.perf.record import (
    PerfCollectorBase,
    PerfRecord,
    cpu_wide_allowed,
    demangling,
    left_mangled,
    no_recording,
    ring_pages,
)
from diagnose.formats.perf_script import LOST, FrameNamer, demangle_table, parse_script
from diagnose.formats.speedscope import samples_to_speedscope
from diagnose.formats.stacks import StackTable, ThreadFrame, format_folded

MAX_BYTES = 256 * 1024 * 1024  # --max-size: ~0.01 MB/s per busy core measured with fp
RING_BYTES = 512 * 1024  # per CPU
SCRIPT_TIMEOUT = 120.0


def thread_names(pid: int, tids: Iterable[int]) -> dict[int, str]:
    """Kernel names of the threads still alive (best effort; the target sets them)."""
    out: dict[int, str] = {}
    for tid in tids:
        path = f"/proc/{pid}/task/{tid}/comm"
        with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as fh:
            out[tid] = fh.read().strip()[:64]
    return out


class PerfCollector(PerfCollectorBase):
    name = "perf"
    description = "native on-CPU stacks of every thread (perf cpu-clock, frame pointers)"
    feature = "cpu_clock"

    def start(self, ctx: CaptureContext) -> None:
        events = ["-e", "cpu-clock", "-F", str(ctx.options.rate), "--call-graph", "fp"]
        self.rec = PerfRecord(
            ctx, self.perf, "native", events, MAX_BYTES, ring_pages(RING_BYTES),
            cpu_wide=ctx.options.perf_scope == "auto" and cpu_wide_allowed(),
        )  # fmt: skip
        self.rec.start()

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        rec = self.rec
        assert rec is not None and self.caps is not None
        rec.wait(timeout)
        details: dict[str, object] = {
            "event": "cpu-clock",
            "rate_hz": ctx.options.rate,
            "call_graph": "fp",
            "perf_version": self.caps.version,
            "probe": self.caps.to_dict(),
            "recorded_bytes": rec.size_bytes(),
            # the target's threads (-p), or the CPUs it may run on (-a -C), read back for it
            "scope": f"cpus {rec.cpus}" if rec.cpus else "threads",
        }
        files = [rec.stderr_rel]
        try:
            if rec.size_bytes() == 0:
                return self.record(CollectorStatus.FAILED, no_recording(rec), files, **details)
            files.append(rec.script_stderr_rel)
            tool, no_demangle = demangling(details)
            extra = ["--show-lost-events", *no_demangle]
            lines = rec.script("tid,time,event,ip,sym,dso", extra, SCRIPT_TIMEOUT)
            n, lost, t_first, t_last, names, mangled = self._write(ctx, lines, tool, rec.namer())
            rec.named_here(details)
        finally:
            rec.cleanup()
        chunks, error = rec.script_warnings()
        lost = lost or chunks  # LOST records count events; without them, perf's chunk count
        details.update(
            samples=n,
            lost_events=lost,
            first_s=t_first,
            last_s=t_last,
            threads=len(names),
        )
        tables = [
            "native/samples.csv",
            "native/stacks.csv",
            "native/stacks.folded",
            "native/native.speedscope.json",
        ]
        busy = max(0.05, 5 / max(1, ctx.options.rate))  # the CPU time of 5 samples
        gap = self.attach_gap(ctx, set(names), busy, "on-CPU stacks", details)
        if n == 0:
            nothing = "no on-CPU samples: no thread of the target ran on a CPU (an idle target)"
            unseen = (
                f": {gap}"
                if gap
                else ": perf's sampling clock runs per thread, and CPU spent by threads that "
                "each live a few milliseconds (a thread started per request) never reaches a "
                "sample"
                if not rec.cpus
                else ""
            )
            return self.nothing_recorded(
                ctx, rec, error, nothing, files + tables, details, busy, unseen
            )
        files += tables
        problems = [gap] if gap else []
        if rec.capped():
            problems.append(
                f"the recording reached its {MAX_BYTES // 2**20} MB cap at {t_last:.1f} s"
            )
        notes = [left_mangled(details)] if mangled else []
        return self.conclude(ctx, problems, files, details, lost, recorded=n, notes=notes)

    def _write(
        self,
        ctx: CaptureContext,
        lines: Iterable[str],
        demangle_with: str | None = None,
        namer: FrameNamer | None = None,
    ) -> tuple[int, int, float | None, float | None, dict[int, str], bool]:
        """Samples, lost events, first and last sample times, thread names, and whether
        ``demangle_with`` failed (the frames are then left mangled)."""
        table = StackTable()
        counts: Counter[tuple[int, int]] = Counter()
        n = lost = 0
        t_first: float | None = None
        t_last: float | None = None
        w = ctx.writer
        with w.open_text("native/samples.csv") as fh:
            cw = guarded_csv_writer(fh)
            cw.writerow(["t", "tid", "stack_id"])
            for ev in parse_script(lines, namer):
                if ev.event == LOST:
                    lost += ev.lost
                    continue
                if ev.event != "cpu-clock":
                    continue
                t = round(ev.t - ctx.t0, 6)
                stack = tuple(reversed(ev.stack)) or ("[unknown] ([unknown])",)
                sid = table.intern(stack)
                cw.writerow([t, ev.tid, sid])
                counts[(ev.tid, sid)] += 1
                n += 1
                t_first = t if t_first is None else t_first
                t_last = t
        mangled = demangle_table(table, demangle_with) is None
        with w.open_text("native/stacks.csv") as fh:
            cw = guarded_csv_writer(fh)
            cw.writerow(["stack_id", "frames"])
            for sid, stack in enumerate(table.stacks):
                cw.writerow([sid, ";".join(stack)])
        names = thread_names(ctx.target.pid, {tid for tid, _ in counts})
        for tid, _ in counts:
            names.setdefault(tid, "")
        period_ms = 1000.0 / max(1, ctx.options.rate)
        rows = [
            ((ThreadFrame(tid, names.get(tid, "")).format(), *table.stacks[sid]), c * period_ms)
            for (tid, sid), c in counts.items()
        ]
        w.write_text("native/stacks.folded", format_folded(rows))
        w.write_json(
            "native/native.speedscope.json",
            samples_to_speedscope(
                ((tid, table.stacks[sid], c * period_ms) for (tid, sid), c in counts.items()),
                names,
                name=f"Native on-CPU stacks of PID {ctx.target.pid} (perf cpu-clock)",
                unit="milliseconds",
            ),
        )
        return n, lost, t_first, t_last, names, mangled
