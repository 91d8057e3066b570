"""``perf c2c report --stdio`` -> contended cache lines.

The report is a series of sections, each titled between two lines of ``=``:

- key/value sections ("Trace Event Information", "Global Shared Cache Line Event
  Information", "c2c details"): ``  Load Local HITM   :   2092``;
- "Shared Data Cache Line Table": one row per cache line (address, HITM counts, loads,
  stores);
- "Shared Cache Line Distribution Pareto": per cache line, one row per offset and code
  address that touched it (with ``-c tid,...`` per thread): symbol, object, source line.

Columns differ between perf versions and CPUs (Intel HITM, AMD IBS, Arm SPE "peer"
snoops; older perf put "Total records" first), so nothing is read by position: the
``# .....`` line under each table header gives the columns' extents, the header lines above
it their names (a dashed group such as ``----- Load Hitm -----`` prefixes the names under
it), and each value goes to the column it lies under.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_KV = re.compile(r"^\s*(?P<key>[^:#=][^:]*?)\s*:\s*(?P<value>.*?)\s*$")
_GROUP = re.compile(r"-+\s*(?P<name>[^-\s][^-]*?)\s*-+")
_DOTS = re.compile(r"\.+")
_TOKEN = re.compile(r"\S+")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")


@dataclass
class Column:
    start: int
    end: int  # inclusive
    name: str  # e.g. "Tot Hitm", "records" with its word above: "Total records"
    group: str = ""  # the dashed group above it, e.g. "Load Hitm"

    @property
    def key(self) -> str:
        return f"{self.group}/{self.name}" if self.group else self.name


@dataclass
class C2cAccess:
    """One row of the Pareto section: who touched which offset of a cache line."""

    offset: str
    code_address: str = ""
    symbol: str = ""
    object: str = ""
    source: str = ""
    pid: int | None = None
    tid: int | None = None
    thread: str = ""  # "TID:comm" as perf prints it (the target's text)
    remote_pct: float | None = None  # share of the line's remote HITMs (or peer snoops)
    local_pct: float | None = None
    records: int | None = None
    cpus: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class C2cLine:
    index: int
    address: str
    node: str = ""
    share: float | None = None  # the sort column: share of all HITMs (or peer snoops), 0-1
    hitm: int | None = None  # HITM loads on this line (peer snoops when metric is "peer")
    hitm_local: int | None = None
    hitm_remote: int | None = None
    records: int | None = None
    loads: int | None = None
    stores: int | None = None
    sort_column: str = ""  # the table's share column: "Tot Hitm", "Peer Snoop", ...
    accesses: list[C2cAccess] = field(default_factory=list)

    def offsets(self) -> list[str]:
        return sorted({a.offset for a in self.accesses if a.offset})

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "accesses"}
        d["offsets"] = self.offsets()
        d["accesses"] = [a.to_dict() for a in self.accesses]
        return d


@dataclass
class C2cReport:
    summary: dict[str, float] = field(default_factory=dict)  # both statistics sections
    details: dict[str, str] = field(default_factory=dict)  # "c2c details"
    lines: list[C2cLine] = field(default_factory=list)
    metric: str = "hitm"  # "hitm", or "peer" when perf sorted on peer snoops (Arm SPE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "details": self.details,
            "metric": self.metric,
            "lines": [ln.to_dict() for ln in self.lines],
        }


class C2cFormatError(ValueError):
    pass


def _num(text: str) -> float | None:
    t = text.strip().rstrip("%")
    try:
        return float(t)
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    v = _num(text)
    return None if v is None else int(v)


def _pct(text: str | None) -> float | None:
    if text is None or not text.strip().endswith("%"):
        return None
    v = _num(text)
    return None if v is None else round(v / 100.0, 6)


def columns(header: list[str], dots: str) -> list[Column]:
    """Columns from the header lines above a ``# .....`` line."""
    spans = [(m.start(), m.end() - 1) for m in _DOTS.finditer(dots)]
    names_line = header[-1] if header else ""
    top = header[-2] if len(header) >= 2 else ""
    groups = [(m.start(), m.end() - 1, m.group("name").strip()) for m in _GROUP.finditer(top)]
    cols = []
    for i, (s, e) in enumerate(spans):
        last = i == len(spans) - 1
        nxt = spans[i + 1][0] if not last else None
        name = names_line[s : (None if last else e + 1)].strip().lstrip("#").strip()
        word_above = ""
        group = ""
        for gs, ge, gname in groups:
            if gs <= e and ge >= s:
                group = gname
        if not group:
            seg = top[s : (None if last else (nxt if nxt is not None else e + 1))]
            word_above = seg.strip().lstrip("#").strip()
            if "-" in word_above:
                word_above = ""
        cols.append(Column(s, e, f"{word_above} {name}".strip(), group))
    return cols


def split_row(line: str, cols: list[Column]) -> dict[str, str]:
    """Each whitespace-separated value goes to the column it overlaps most (or the
    nearest one: left-aligned text such as a symbol can run past its column)."""
    cells: dict[int, list[str]] = {}
    for m in _TOKEN.finditer(line):
        s, e = m.start(), m.end() - 1
        best, best_score = 0, None
        for i, c in enumerate(cols):
            overlap = min(e, c.end) - max(s, c.start) + 1
            score = overlap if overlap > 0 else -min(abs(s - c.end), abs(e - c.start))
            if best_score is None or score > best_score:
                best, best_score = i, score
        cells.setdefault(best, []).append(m.group(0))
    return {cols[i].key: " ".join(v) for i, v in cells.items()}


def _find(row: dict[str, str], *keys: str) -> str | None:
    """The first of ``keys`` present; a key ``*/Name`` matches any group."""
    for k in keys:
        if k.startswith("*/"):
            for rk, v in row.items():
                if rk.endswith(k[1:]) or rk == k[2:]:
                    return v
        elif k in row:
            return row[k]
    return None


def _hitm_group(row: dict[str, str], name: str) -> str | None:
    for rk, v in row.items():
        group, _, col = rk.rpartition("/")
        if ("Hitm" in group or "Peer" in group) and col == name:
            return v
    return None


def _line_from_row(row: dict[str, str], cols: list[Column]) -> C2cLine | None:
    idx = _int(row.get("Index"))
    addr = _find(row, "Cacheline/Address", "*/Address", "Address")
    if idx is None or addr is None or not _HEX.match(addr):
        return None
    share, sort_column = None, ""
    for c in cols:
        v = row.get(c.key)
        if v is not None and v.endswith("%"):
            share, sort_column = _pct(v), c.key
            break
    line = C2cLine(idx, addr, node=_find(row, "Cacheline/Node", "*/Node") or "", share=share)
    line.sort_column = sort_column
    line.hitm = _int(_hitm_group(row, "Total"))
    line.hitm_local = _int(_hitm_group(row, "LclHitm") or _hitm_group(row, "Lcl")
                           or _hitm_group(row, "Local"))  # fmt: skip
    line.hitm_remote = _int(_hitm_group(row, "RmtHitm") or _hitm_group(row, "Rmt")
                            or _hitm_group(row, "Remote"))  # fmt: skip
    if line.hitm is None and line.hitm_local is not None and line.hitm_remote is not None:
        line.hitm = line.hitm_local + line.hitm_remote
    line.records = _int(_find(row, "Total records"))
    line.loads = _int(_find(row, "Total Loads"))
    line.stores = _int(_find(row, "Total Stores"))
    return line


def _access_from_row(row: dict[str, str]) -> C2cAccess | None:
    offset = _find(row, "Data address/Offset", "*/Offset", "Offset")
    if offset is None or not _HEX.match(offset):
        return None
    a = C2cAccess(offset=offset)
    a.code_address = _find(row, "Code address") or ""
    sym = _find(row, "Symbol") or ""
    a.symbol = re.sub(r"^\[[.k]\]\s+", "", sym)
    a.object = _find(row, "Shared Object", "Object") or ""
    a.source = _find(row, "Source:Line") or ""
    a.pid = _int(_find(row, "Pid"))
    thread = _find(row, "Tid")
    if thread:
        a.thread = thread
        a.tid = _int(thread.split(":", 1)[0])
    for rk, v in row.items():
        group, _, col = rk.rpartition("/")
        if group in ("HITM", "Peer Snoop") or "Hitm" in group or "HITM" in group:
            if col.startswith("Rmt"):
                a.remote_pct = _pct(v)
            elif col.startswith("Lcl"):
                a.local_pct = _pct(v)
    a.records = _int(_find(row, "Total records"))
    a.cpus = _int(_find(row, "cpu cnt"))
    return a


def parse_c2c(text: str) -> C2cReport:
    """Parse the whole ``--stdio`` report. Raises C2cFormatError if it has no cache-line
    table at all (not a c2c report)."""
    rep = C2cReport()
    lines = text.splitlines()
    section = ""
    header: list[str] = []
    cols: list[Column] | None = None
    by_index: dict[int, C2cLine] = {}
    current: C2cLine | None = None
    pareto_state = "none"  # none | head (next row is a cache line's own row) | rows
    saw_table = False
    last_key = ""
    i = 0
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        if s.startswith("===") and i + 2 < len(lines) and lines[i + 2].strip().startswith("==="):
            section = lines[i + 1].strip()
            header, cols, pareto_state, current = [], None, "none", None
            saw_table = saw_table or "Cache Line Table" in section
            i += 3
            continue
        i += 1
        if not s:
            continue
        if section in ("Trace Event Information", "Global Shared Cache Line Event Information"):
            m = _KV.match(raw)
            if m:
                v = _num(m.group("value"))
                if v is not None:
                    pct = m.group("value").strip().endswith("%")
                    rep.summary[m.group("key")] = v / 100.0 if pct else v
        elif section == "c2c details":
            m = _KV.match(raw)
            if m:
                last_key = m.group("key")
                prev = rep.details.get(last_key)
                rep.details[last_key] = f"{prev}, {m.group('value')}" if prev else m.group("value")
            elif s.startswith(":") and last_key:
                rep.details[last_key] += ", " + s[1:].strip()
        elif "Cache Line Table" in section or "Distribution Pareto" in section:
            if s.startswith("#"):
                body = s[1:].strip()
                if body and set(body) <= {".", " "}:
                    cols = columns(header, raw)
                elif body:
                    header.append(raw)
                continue
            if cols is None:
                continue
            if "Cache Line Table" in section:
                line = _line_from_row(split_row(raw, cols), cols)
                if line is not None:
                    rep.lines.append(line)
                    by_index[line.index] = line
                continue
            if set(s) == {"-"}:
                pareto_state = "head" if pareto_state != "head" else "rows"
                continue
            if pareto_state == "head":
                toks = s.split()
                num = _int(toks[0]) if toks else None
                current = by_index.get(num) if num is not None else None
                if current is None and toks and _HEX.match(toks[-1]):
                    current = next((ln for ln in rep.lines if ln.address == toks[-1]), None)
                continue
            if pareto_state == "rows" and current is not None:
                acc = _access_from_row(split_row(raw, cols))
                if acc is not None:
                    current.accesses.append(acc)
    if not saw_table:
        raise C2cFormatError("no 'Shared Data Cache Line Table' section: not a perf c2c report")
    sort_on = rep.details.get("Cachelines sort on", "") + " ".join(
        ln.sort_column for ln in rep.lines[:1]
    )
    if "peer" in sort_on.lower():
        rep.metric = "peer"
    return rep
