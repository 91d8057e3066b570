"""The ``false_sharing`` collector: which cache lines the target's threads write, without a PMU.

``perf record -e cpu-clock -c 4000000 --user-regs=ax,...,r15 -p PID``: one sample per 4 ms
of each thread's CPU time (250 per busy second), each with the thread's user registers. At the end of the capture, while the process
still runs, the code at the hottest sampled IPs is copied from its memory
(:mod:`diagnose.collect.perf.codebytes` says why copy, not read the files later), and
decoded (:mod:`diagnose.formats.x86`) to know which registers the memory operands of the
instruction at each IP and of the one before it need. Only those registers are kept: they
are addresses, while the other registers may hold the target's data. The analysis
(:mod:`diagnose.analyse.false_sharing`) computes the addresses written and groups them by
64-byte line.

Bounds: a fixed period of CPU time (:data:`PERIOD_NS`: samples follow the CPU the target
uses, not the wall clock; a frequency (``-F``) would let the kernel retune the period when
the target gets little CPU), the first :data:`MAX_SECONDS` of the window, :data:`MAX_BYTES` of
recording (``--max-size``), :data:`MAX_SAMPLES` samples read back (about 150 bytes each in
memory while converting), the code of :data:`MAX_IPS` addresses. One sample is ~220 bytes
in perf.data (17 registers); a thread that runs all the time adds ~0.55 MB per 10 s, and the
bundle keeps only the aggregated rows (``false_sharing/samples.csv``) and a few KB of code
(``false_sharing/code.json``).

Writes ``false_sharing/samples.csv`` (``tid,ip,samples`` + the registers kept, hex; one row
per distinct combination; ``ip`` is ``kernel`` for samples taken in the kernel, which count
in the process's CPU but are not decoded) and ``false_sharing/code.json``.
"""

from __future__ import annotations

import csv
import platform
from array import array
from collections import Counter
from typing import Any

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.base import CaptureContext, CollectorFailed
from diagnose.collect.perf.codebytes import (
    MAX_IPS,
    CodeAt,
    CodeReader,
    MapEntry,
    locate,
    lookup_source_lines,
    read_maps,
)
from diagnose.collect.perf.oncpu import thread_names
from diagnose.collect.perf.record import PerfCollectorBase, PerfRecord, record_failure, ring_pages
from diagnose.formats import x86
from diagnose.formats.perf_regs import ADDRESS_REGS, USER_REGS_OPTION, Lost, parse_regs_script

PERIOD_NS = 4_000_000  # ns of a thread's CPU time per sample: 250 samples per busy second
MAX_SECONDS = 60.0
MAX_BYTES = 64 * 1024 * 1024
MAX_SAMPLES = 200_000
RING_BYTES = 1024 * 1024  # per CPU
SCRIPT_TIMEOUT = 120.0
FIELDS = "tid,time,ip,sym,symoff,dso,uregs"
ADDR_REGS = ADDRESS_REGS
SAMPLE_COLUMNS = ["tid", "ip", "samples", *ADDR_REGS]
CODE_SCHEMA = "diagnose.false_sharing.code/1"
_NONE = 2**64 - 1  # a register perf did not give (the sample had no user registers)


class FalseSharingCollector(PerfCollectorBase):
    name = "false_sharing"
    description = (
        "cache lines written by several threads (false and true sharing) from cpu-clock "
        "samples with user registers and the code at each sampled IP; needs no PMU"
    )
    feature = "user_regs"

    def __init__(self) -> None:
        super().__init__()
        self.maps0: list[MapEntry] = []

    def probe(self, ctx: CaptureContext) -> str | None:
        reason = super().probe(ctx)
        if reason:
            return reason
        machine = platform.machine()
        if machine not in ("x86_64", "amd64", "AMD64"):
            return f"the instruction decoder reads x86-64 code only; this host is {machine}"
        missing = x86.available()
        if missing:
            raise CollectorFailed(missing)
        return None

    def start(self, ctx: CaptureContext) -> None:
        self.maps0 = read_maps(ctx.target.pid)
        events = ["-e", "cpu-clock", "-c", str(PERIOD_NS), USER_REGS_OPTION]
        self.rec = PerfRecord(
            ctx, self.perf, "false_sharing", events, MAX_BYTES, ring_pages(RING_BYTES),
            max_seconds=MAX_SECONDS,
        )  # fmt: skip
        self.rec.start()

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        rec = self.rec
        assert rec is not None and self.caps is not None
        rec.wait(timeout)
        details: dict[str, Any] = {
            "event": "cpu-clock",
            "period_ns": PERIOD_NS,
            "max_seconds": MAX_SECONDS,
            "max_bytes": MAX_BYTES,
            "recorded_bytes": rec.size_bytes(),
        }
        files = [rec.stderr_rel]
        try:
            if rec.size_bytes() == 0:
                reason = record_failure(rec.stderr()) or "perf recorded nothing"
                return self.record(CollectorStatus.FAILED, reason, files, **details)
            files.append(rec.script_stderr_rel)
            read = _read_samples(rec.script(FIELDS, ["--show-lost-events"], SCRIPT_TIMEOUT))
        finally:
            rec.cleanup()
        chunks, error = rec.script_warnings()
        lost = read.lost or chunks
        details.update(samples=read.n, kernel_samples=sum(read.kernel.values()),
                       lost_events=lost, truncated=read.truncated)  # fmt: skip
        if read.n == 0:
            if ctx.target_exited.is_set():
                reason = "the target exited before perf recorded a sample"
            elif error or "Captured and wrote" not in rec.stderr():
                reason = error or record_failure(rec.stderr()) or "perf recorded no samples"
            else:
                reason = "perf recorded no samples: the target's threads did not run"
            return self.record(CollectorStatus.FAILED, reason, files, **details)
        pid = ctx.target.pid
        order = [ip for ip, _ in read.ip_counts.most_common(MAX_IPS)]
        maps = read_maps(pid) or self.maps0
        reader = CodeReader(pid, maps)
        try:
            code, unread = locate(reader, [(ip, read.func_start(ip)) for ip in order])
        finally:
            reader.close()
        need = {ip: x86.needed_regs(c.insns()) for ip, c in code.items()}
        lines = lookup_source_lines(pid, code, order, _shared_write_sites(read, code))
        rows = _rows(read, need)
        w = ctx.writer
        with w.open_text("false_sharing/samples.csv") as fh:
            cw = csv.writer(fh)
            cw.writerow(SAMPLE_COLUMNS)
            cw.writerows(rows)
        names = thread_names(pid, {int(t) for t in read.tids})
        w.write_json("false_sharing/code.json", _code_json(read, code, unread, lines, names))
        files += ["false_sharing/samples.csv", "false_sharing/code.json"]
        sources = Counter(c.source for c in code.values())
        details.update(
            ips=len(read.ip_counts), ips_with_code=len(code), ips_unread=len(unread),
            code_from=dict(sources), rows=len(rows),
        )  # fmt: skip
        problems = []
        if read.truncated:
            problems.append(f"only the first {MAX_SAMPLES} samples were read back")
        if rec.capped():
            problems.append(f"the recording reached its {MAX_BYTES // 2**20} MB cap")
        window = ctx.window()
        if window > MAX_SECONDS + 1:
            problems.append(f"recorded the first {MAX_SECONDS:.0f} s of the {window:.0f} s window")
        return self.conclude(ctx, problems, files, details, lost, recorded=read.n)


class _Read:
    """The samples of one recording, compactly: per user sample 2 + 16 unsigned 64-bit
    values (tid, ip, registers) in one flat array; kernel samples counted per thread."""

    def __init__(self) -> None:
        self.flat = array("Q")
        self.n = 0
        self.lost = 0
        self.truncated = False
        self.kernel: Counter[int] = Counter()
        self.ip_counts: Counter[int] = Counter()
        self.where: dict[int, tuple[str, int | None, str]] = {}  # ip -> sym, symoff, dso
        self.tids: set[int] = set()

    def func_start(self, ip: int) -> int | None:
        sym, off, _ = self.where.get(ip, ("", None, ""))
        return ip - off if sym and off is not None else None


def _read_samples(lines: Any) -> _Read:
    r = _Read()
    for rec in parse_regs_script(lines):
        if isinstance(rec, Lost):
            r.lost += rec.n
            continue
        if r.n >= MAX_SAMPLES:
            r.truncated = True
            continue  # keep reading: perf script is stopped by its own end, not by us
        r.n += 1
        r.tids.add(rec.tid)
        if rec.kernel:
            r.kernel[rec.tid] += 1
            continue
        r.ip_counts[rec.ip] += 1
        if rec.ip not in r.where:
            r.where[rec.ip] = (rec.sym, rec.symoff, rec.dso)
        r.flat.append(rec.tid & 0xFFFFFFFF)
        r.flat.append(rec.ip)
        regs = rec.regs
        r.flat.extend(regs.get(name, _NONE) & 0xFFFFFFFFFFFFFFFF for name in ADDR_REGS)
    return r


def _shared_write_sites(r: _Read, code: dict[int, CodeAt]) -> set[int]:
    """Addresses of the instructions that write a cache line two or more threads write: the
    ones whose source lines are worth looking up (the analysis decides what they mean)."""
    width = 2 + len(ADDR_REGS)
    idx = {name: 2 + i for i, name in enumerate(ADDR_REGS)}
    pairs = {ip: c.insns() for ip, c in code.items()}
    tids: dict[int, set[int]] = {}
    sites: dict[int, set[int]] = {}
    flat = r.flat
    for k in range(0, len(flat), width):
        tid, ip = flat[k], flat[k + 1]
        prev, at = pairs.get(ip, (None, None))
        for insn, ran in ((prev, True), (at, False)):
            if insn is None:
                continue
            for op in insn.mem:
                if not op.write:
                    continue
                regs = {
                    g: flat[k + idx[g]]
                    for g in (op.base, op.index)
                    if g in idx and flat[k + idx[g]] != _NONE
                }
                ea = x86.effective_address(op, regs, insn.end, insn if ran else None)
                if ea is not None:
                    line = ea & ~63
                    tids.setdefault(line, set()).add(tid)
                    sites.setdefault(line, set()).add(insn.address)
    return {a for line, t in tids.items() if len(t) >= 2 for a in sites[line]}


def _rows(r: _Read, need: dict[int, set[str]]) -> list[list[str | int]]:
    """Aggregated rows: (tid, ip, the needed registers' values) -> samples."""
    width = 2 + len(ADDR_REGS)
    idx = {name: 2 + i for i, name in enumerate(ADDR_REGS)}
    counts: Counter[tuple[int, int, tuple[tuple[str, int], ...]]] = Counter()
    flat = r.flat
    for k in range(0, len(flat), width):
        tid, ip = flat[k], flat[k + 1]
        keep = need.get(ip, ())
        regs = tuple(
            (name, flat[k + idx[name]]) for name in sorted(keep) if flat[k + idx[name]] != _NONE
        )
        counts[(tid, ip, regs)] += 1
    rows: list[list[str | int]] = []
    for (tid, ip, regs), n in counts.most_common():
        vals = dict(regs)
        rows.append([tid, hex(ip), n, *(hex(vals[r]) if r in vals else "" for r in ADDR_REGS)])
    for tid, n in sorted(r.kernel.items()):
        rows.append([tid, "kernel", n, *([""] * len(ADDR_REGS))])
    return rows


def _code_json(
    r: _Read,
    code: dict[int, CodeAt],
    unread: dict[int, str],
    lines: dict[int, str],
    names: dict[int, str],
) -> dict[str, Any]:
    ips = {}
    for ip, c in code.items():
        sym, off, dso = r.where.get(ip, ("", None, ""))
        ips[hex(ip)] = {
            "sym": sym,
            "symoff": off,
            "dso": dso,
            "start": hex(c.start),
            "code": c.code.hex(),
            "prev": hex(c.prev) if c.prev is not None else None,
            "how": c.how,
            "source": c.source,
            "map": c.mapping.to_dict() if c.mapping else None,
            "lines": {hex(a): ln for a, ln in lines.items() if a in (ip, c.prev)},
        }
    return {
        "schema": CODE_SCHEMA,
        "arch": "x86_64",
        "ips": ips,
        "unread": {hex(ip): why for ip, why in unread.items()},
        "threads": {str(t): n for t, n in sorted(names.items())},
    }
