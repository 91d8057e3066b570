"""Cache lines written by several threads, from sampled user registers (no PMU needed).

The ``false_sharing`` collector recorded, for cpu-clock samples of the target's threads,
the sampled IP, the registers its address operands need, and the code around each hot IP.
Here, for each sample:

1. decode the instruction at the IP and the one before it (skid: a stalled store or locked
   read-modify-write usually shows as the instruction after it) - :mod:`diagnose.formats.x86`;
2. compute the address of each memory operand from the sampled registers; the previous
   instruction has already run, so an operand whose base or index register it overwrote
   gets no address (never a guess);
3. group the addresses by 64-byte cache line.

A line is a **false-sharing candidate** when two or more threads write it and one of its
fields (overlapping writes merged) is written by some of them and not by the others: each
write by the others takes the line away from that field's writer although they never touch
the field. One address written by two or more threads is **true sharing**
(a hot atomic counter, a lock word): padding cannot help it; sharding or batching can.
A thread counts as a writer of a line only with at least :data:`MIN_WRITER_SAMPLES`
samples there and :data:`MIN_WRITER_FRACTION` of the line's write samples: one stray sample
(start-up, a rare path) is no evidence that it keeps taking the line.

The share reported is of *all* the process's samples in the recording (user and kernel):
the CPU time spent in instructions that access the line. It says where the time goes, not
how much of it the coherence traffic costs (that needs a PMU: perf c2c).

:func:`analyse_lines` is the pure function (records in, metrics and table out);
:func:`shared_lines` is the analysis step.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from diagnose.analyse.model import Context
from diagnose.formats import x86
from diagnose.formats.perf_regs import ADDRESS_REGS

LINE = 64
MIN_WRITER_SAMPLES = 3
MIN_WRITER_FRACTION = 0.05
MAX_LINES = 20  # lines in the report table, per kind

SRC = "false_sharing"


@dataclass(frozen=True)
class SampleRow:
    """Samples of one thread at one IP with the same address registers (a row of
    ``false_sharing/samples.csv``). ``ip`` None: samples taken in the kernel."""

    tid: int
    ip: int | None
    samples: int
    regs: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CodeInfo:
    """What the collector kept about one sampled IP (``false_sharing/code.json``)."""

    ip: int
    start: int
    code: bytes
    prev: int | None
    how: str = ""
    sym: str = ""
    symoff: int | None = None
    dso: str = ""
    lines: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Access:
    tid: int
    line: int
    offset: int
    size: int
    write: bool
    insn: int  # the accessing instruction's address
    samples: int


def decode(info: CodeInfo) -> tuple[x86.Insn | None, x86.Insn | None]:
    """(previous instruction, instruction at the IP) from the kept code bytes."""
    return _decode(info.ip, info.start, info.code, info.prev)


@functools.lru_cache(maxsize=4096)
def _decode(
    ip: int, start: int, code: bytes, prev: int | None
) -> tuple[x86.Insn | None, x86.Insn | None]:
    return x86.decode_pair(code, start, ip, prev)


def accesses(
    row: SampleRow, prev: x86.Insn | None, at: x86.Insn | None
) -> tuple[list[Access], str]:
    """The memory accesses of one row's samples with their addresses, and what happened to
    its writes: "resolved", "unresolved" (a write whose address the registers cannot
    give), or "no_write"."""
    out: list[Access] = []
    unresolved = False
    for insn, after in ((prev, True), (at, False)):
        if insn is None:
            continue
        for op in insn.mem:
            ea = x86.effective_address(op, row.regs, insn.end, insn if after else None)
            if ea is None:
                unresolved = unresolved or op.write
                continue
            line = ea & ~(LINE - 1)
            out.append(Access(row.tid, line, ea - line, op.size, op.write, insn.address,
                              row.samples))  # fmt: skip
    if any(a.write for a in out):
        return out, "resolved"
    return out, ("unresolved" if unresolved else "no_write")


def _fields(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping [offset, offset + size) ranges merged into fields."""
    out: list[list[int]] = []
    for lo, size in sorted(ranges):
        hi = lo + max(1, size)
        if out and lo < out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


@dataclass
class _Line:
    line: int
    samples: int = 0  # samples accessing the line (each sample row counted once)
    writes: Counter[tuple[int, int, int]] = field(default_factory=Counter)  # (tid, off, size)
    reads: Counter[tuple[int, int, int]] = field(default_factory=Counter)
    insns: Counter[tuple[int, int, int, int]] = field(default_factory=Counter)  # tid,off,size,insn


def classify(ln: _Line) -> dict[str, Any] | None:
    """One line's writers, fields and kind; None when fewer than two threads write it."""
    per_tid: Counter[int] = Counter()
    for (tid, _o, _s), n in ln.writes.items():
        per_tid[tid] += n
    total = sum(per_tid.values())
    writers = {
        t
        for t, n in per_tid.items()
        if n >= MIN_WRITER_SAMPLES and n >= MIN_WRITER_FRACTION * total
    }
    if len(writers) < 2:
        return None
    fields = _fields((o, s) for (t, o, s) in ln.writes if t in writers)
    owners: list[set[int]] = [set() for _ in fields]
    for t, o, _s in ln.writes:
        if t not in writers:
            continue
        for i, (lo, hi) in enumerate(fields):
            if lo <= o < hi:
                owners[i].add(t)
    true = any(len(w) >= 2 for w in owners)
    # a field that some writers of the line write and others do not: those others take the
    # line from under it although they never touch it
    false = any(w and w < writers for w in owners)
    if not (true or false):
        return None
    return {
        "writers": writers,
        "fields": fields,
        "owners": owners,
        "false": false,
        "true": true,
    }


def _site(info: CodeInfo | None, insn: x86.Insn | None, addr: int) -> dict[str, Any]:
    if info is None:
        return {"address": hex(addr), "text": "", "function": "", "library": "", "source": ""}
    func = ""
    if info.sym:
        off = addr - (info.ip - info.symoff) if info.symoff is not None else None
        func = f"{info.sym}+{off:#x}" if off is not None and off >= 0 else info.sym
    return {
        "address": hex(addr),
        "text": insn.text if insn is not None else "",
        "function": func,
        "library": info.dso.rsplit("/", 1)[-1],
        "source": info.lines.get(addr, ""),
    }


def site_label(site: Mapping[str, Any]) -> str:
    """``lock add qword ptr [rax], 1 in worker+0x18 (fs_counters) at fs_counters.c:52``"""
    text = site.get("text") or site.get("address", "?")
    where = site.get("function") or site.get("address", "")
    lib = site.get("library") or ""
    out = f"{text} in {where}" + (f" ({lib})" if lib else "")
    if site.get("source"):
        out += f" at {site['source']}"
    return out


def analyse_lines(
    rows: Iterable[SampleRow],
    code: Mapping[int, CodeInfo],
    names: Mapping[int, str] | None = None,
    c2c_lines: Iterable[int] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pure analysis: sample rows and the code at their IPs -> (metrics, table).

    ``c2c_lines``: the contended line addresses perf c2c found, when it ran (cross-check).
    """
    names = names or {}
    total = user = 0
    outcome: Counter[str] = Counter()
    lines: dict[int, _Line] = {}
    insn_at: dict[int, tuple[CodeInfo, x86.Insn]] = {}
    for row in rows:
        total += row.samples
        if row.ip is None:
            continue
        user += row.samples
        info = code.get(row.ip)
        if info is None:
            outcome["no_code"] += row.samples
            continue
        prev, at = decode(info)
        for insn in (prev, at):
            if insn is not None:
                insn_at.setdefault(insn.address, (info, insn))
        acc, what = accesses(row, prev, at)
        outcome[what] += row.samples
        seen: set[int] = set()
        for a in acc:
            ln = lines.setdefault(a.line, _Line(a.line))
            if a.line not in seen:
                seen.add(a.line)
                ln.samples += a.samples
            (ln.writes if a.write else ln.reads)[(a.tid, a.offset, a.size)] += a.samples
            if a.write:
                ln.insns[(a.tid, a.offset, a.size, a.insn)] += a.samples
    c2c = set(c2c_lines) if c2c_lines is not None else None
    table_lines: list[dict[str, Any]] = []
    for ln in sorted(lines.values(), key=lambda x: (-x.samples, x.line)):
        k = classify(ln)
        if k is None:
            continue
        table_lines.append(_describe(ln, k, total, insn_at, names, c2c))
    m = _line_metrics(table_lines, total, outcome, c2c)
    table = {
        "samples": total,
        "user_samples": user,
        "outcomes": {k: outcome[k] for k in ("resolved", "unresolved", "no_write", "no_code")},
        "lines": table_lines[: 2 * MAX_LINES],
        "c2c_ran": c2c is not None,
    }
    return m, table


def _line_metrics(
    table_lines: list[dict[str, Any]],
    total: int,
    outcome: Counter[str],
    c2c: set[int] | None,
) -> dict[str, Any]:
    """The false_sharing_* and true_sharing_* metrics from the classified lines."""
    false = [t for t in table_lines if t["false_sharing"]]
    true = [t for t in table_lines if t["true_sharing"]]
    m: dict[str, Any] = {
        "false_sharing_lines": len(false),
        "false_sharing_share": _share(sum(t["samples"] for t in false), total),
        "false_sharing_top_line": false[0]["line"] if false else "",
        "false_sharing_top_share": false[0]["share"] if false else 0.0,
        "false_sharing_top_offsets": len(false[0]["fields"]) if false else 0,
        "false_sharing_top_threads": len(false[0]["threads"]) if false else 0,
        "false_sharing_top_site": site_label(false[0]["fields"][0]["sites"][0]) if false else "",
        "true_sharing_lines": len(true),
        "true_sharing_share": _share(sum(t["samples"] for t in true), total),
        "true_sharing_top_address": "",
        "true_sharing_top_share": true[0]["share"] if true else 0.0,
        "true_sharing_top_threads": 0,
        "true_sharing_top_site": "",
    }
    if true:
        shared = max((f for f in true[0]["fields"] if len(f["threads"]) >= 2),
                     key=lambda f: f["samples"])  # fmt: skip
        m["true_sharing_top_address"] = shared["address"]
        m["true_sharing_top_threads"] = len(shared["threads"])
        m["true_sharing_top_site"] = site_label(shared["sites"][0])
    writing = outcome["resolved"] + outcome["unresolved"]
    m["false_sharing_coverage"] = _share(outcome["resolved"], writing) if writing else None
    found = false or true
    top = found[0] if found else None
    m["false_sharing_c2c_agrees"] = (
        None if c2c is None or top is None else int(top["c2c_contended"] is True)
    )
    return m


def _share(n: int, total: int) -> float:
    return round(n / total, 4) if total else 0.0


def _describe(
    ln: _Line,
    k: dict[str, Any],
    total: int,
    insn_at: Mapping[int, tuple[CodeInfo, x86.Insn]],
    names: Mapping[int, str],
    c2c: set[int] | None,
) -> dict[str, Any]:
    writers: set[int] = k["writers"]
    fields = []
    for (lo, hi), owners in zip(k["fields"], k["owners"], strict=True):
        by_insn: Counter[int] = Counter()
        samples = 0
        for (t, o, _s, insn), n in ln.insns.items():
            if t in writers and lo <= o < hi:
                by_insn[insn] += n
                samples += n
        sites = []
        for addr, n in by_insn.most_common(3):
            kept = insn_at.get(addr)
            info, decoded = kept if kept else (None, None)
            sites.append(_site(info, decoded, addr) | {"samples": n})
        fields.append(
            {
                "offset": lo,
                "size": hi - lo,
                "address": hex(ln.line + lo),
                "threads": sorted(owners),
                "samples": samples,
                "sites": sites,
            }
        )
    threads = []
    per_tid: Counter[int] = Counter()
    for (t, _o, _s), n in ln.writes.items():
        per_tid[t] += n
    for t in sorted(writers, key=lambda t: (-per_tid[t], t)):
        offs = sorted({o for (tt, o, _s) in ln.writes if tt == t})
        threads.append(
            {"tid": t, "name": names.get(t, ""), "write_samples": per_tid[t], "offsets": offs}
        )
    readers = sorted({t for (t, _o, _s) in ln.reads} - writers)
    kind = "false+true" if k["false"] and k["true"] else ("false" if k["false"] else "true")
    return {
        "line": hex(ln.line),
        "kind": kind,
        "false_sharing": k["false"],
        "true_sharing": k["true"],
        "samples": ln.samples,
        "share": _share(ln.samples, total),
        "threads": threads,
        "readers": readers[:20],
        "fields": fields,
        "c2c_contended": None if c2c is None else ln.line in c2c,
    }


# --- the bundle ----------------------------------------------------------------------------


def load_rows(records: Iterable[Mapping[str, Any]]) -> list[SampleRow]:
    """Rows of ``false_sharing/samples.csv`` (as dicts of strings) -> :class:`SampleRow`."""
    out = []
    for r in records:
        try:
            tid = int(r["tid"])
            ip_text = str(r["ip"])
            ip = None if ip_text == "kernel" else int(ip_text, 16)
            n = int(r["samples"])
        except (KeyError, TypeError, ValueError):
            continue
        regs = {}
        for name in ADDRESS_REGS:
            v = r.get(name)
            if isinstance(v, str) and v.startswith("0x"):
                try:
                    regs[name] = int(v, 16)
                except ValueError:
                    continue
        out.append(SampleRow(tid, ip, n, regs))
    return out


def load_code(doc: Any) -> tuple[dict[int, CodeInfo], dict[int, str]]:
    """``false_sharing/code.json`` -> (IP -> :class:`CodeInfo`, tid -> thread name)."""
    code: dict[int, CodeInfo] = {}
    if not isinstance(doc, dict):
        return code, {}
    for key, v in (doc.get("ips") or {}).items():
        if not isinstance(v, dict):
            continue
        try:
            ip = int(key, 16)
            start = int(v["start"], 16)
            raw = bytes.fromhex(v.get("code") or "")
            prev = int(v["prev"], 16) if v.get("prev") else None
            symoff = v.get("symoff")
            lines = {int(a, 16): str(s) for a, s in (v.get("lines") or {}).items()}
        except (KeyError, TypeError, ValueError):
            continue
        code[ip] = CodeInfo(
            ip, start, raw, prev, str(v.get("how") or ""), str(v.get("sym") or ""),
            symoff if isinstance(symoff, int) else None, str(v.get("dso") or ""), lines,
        )  # fmt: skip
    names = {}
    for t, n in (doc.get("threads") or {}).items():
        try:
            names[int(t)] = str(n)
        except ValueError:
            continue
    return code, names


def c2c_lines(rep: Any) -> list[int] | None:
    """The 64-byte lines perf c2c found contended (HITM > 0), from ``c2c/lines.json``."""
    if not isinstance(rep, dict):
        return None
    out = []
    for ln in rep.get("lines", []) or []:
        try:
            if isinstance(ln, dict) and (ln.get("hitm") or 0) > 0:
                out.append(int(str(ln.get("address")), 16) & ~(LINE - 1))
        except ValueError:
            continue
    return out


def shared_lines(ctx: Context) -> None:
    """Step: cache lines several threads write, from sampled registers (the
    ``false_sharing`` collector); adds the ``false_sharing_*``/``true_sharing_*`` metrics and
    ``extra["false_sharing"]`` (the report's table), cross-checked with perf c2c."""
    data = ctx.data
    if data.fs_samples is None or data.fs_code is None:
        return
    code, names = load_code(data.fs_code)
    df = data.fs_samples.astype(object).where(data.fs_samples.notna(), None)
    rows = load_rows({str(k): v for k, v in r.items()} for r in df.to_dict("records"))
    # Python threads: py-spy's names ("worker-0") say more than the kernel's ("python")
    names |= {tid: n for tid, n in data.py_names.items() if n}
    m, table = analyse_lines(rows, code, names, c2c_lines(data.c2c))
    ctx.metrics.update(m)
    ctx.out.extra[SRC] = table
