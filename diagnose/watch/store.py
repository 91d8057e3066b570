"""A watch store: one directory of captures and an SQLite index of them (docs/watch.md).

::

    STORE/                      0700, ours alone (SafeDir.private)
      index.sqlite              one row per capture (table ``captures``)
      captures/PID-YYYYmmdd-HHMMSS/
                                a bundle kept whole (its verdict differed from the capture
                                before), or its report.json alone

Everything below the store is reached through its held descriptor or, for a new bundle,
by a path inside a directory only we can write (so nothing can be planted there). Paths
read from an index are checked never to leave the store (``split_member``): another
user's store is data, like another user's bundle.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from diagnose.bundle.safedir import SafeDir, UnsafeDirectory, split_member
from diagnose.bundle.writer import output_error
from diagnose.errors import BadBundle, Busy
from diagnose.render.schema import MAX_REPORT_BYTES, Report, parse_report

INDEX = "index.sqlite"
CAPTURES = "captures"
REPORT = "report.json"
#: ``PRAGMA user_version`` of an index this diagnose writes; it reads these too, and a watch
#: brings an older one up to date (:data:`_MIGRATIONS`)
INDEX_VERSION = 2
READS_VERSIONS = (1, 2)

#: the metrics each row keeps (docs/metrics.md): what history, fleet and alerts compare
KEY_METRICS = (
    "busy_share_running",
    "busy_share_runnable",
    "busy_share_lock",
    "busy_share_gil",
    "busy_share_io",
    "idle_share",
    "runq_delay_p50_ms",
    "runq_delay_p99_ms",
    "sched_runq_delay_p50_ms",
    "sched_runq_delay_p99_ms",
    "ctx_switches_voluntary_per_s",
    "ctx_switches_involuntary_per_s",
    "migrations_per_s",
    "process_cpu_cores",
    "tool_cpu_cores",
    "cores_available",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS captures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started TEXT NOT NULL,
    started_unix REAL NOT NULL,
    pid INTEGER NOT NULL,
    service TEXT NOT NULL,
    category TEXT NOT NULL,
    kind TEXT,
    confidence REAL,
    headline TEXT NOT NULL,
    metrics TEXT NOT NULL,
    duration_s REAL,
    ended_by TEXT NOT NULL,
    path TEXT NOT NULL,
    kept_whole INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    p99_ms REAL,
    p99_baseline_ms REAL,
    drift INTEGER NOT NULL DEFAULT 0,
    drift_from INTEGER,
    comparison TEXT
);
CREATE INDEX IF NOT EXISTS captures_started ON captures (started_unix);
"""
#: version -> what brings an index of that version to the next (version 2: the service's
#: P99 from Prometheus and latency drift; the rows before have no reading)
_MIGRATIONS = {
    1: """
ALTER TABLE captures ADD COLUMN p99_ms REAL;
ALTER TABLE captures ADD COLUMN p99_baseline_ms REAL;
ALTER TABLE captures ADD COLUMN drift INTEGER NOT NULL DEFAULT 0;
ALTER TABLE captures ADD COLUMN drift_from INTEGER;
ALTER TABLE captures ADD COLUMN comparison TEXT;
""",
}


@dataclass(frozen=True)
class CaptureRow:
    """One capture of the index, as it is stored."""

    id: int
    started: str  # ISO 8601, the capture's wall-clock start
    started_unix: float
    pid: int  # the process captured
    service: str
    category: str  # verdict.primary
    kind: str | None
    confidence: float | None
    headline: str
    metrics: dict[str, float | None]  # KEY_METRICS, null where not measured
    duration_s: float | None
    ended_by: str
    path: str  # of the capture's directory, relative to the store
    kept_whole: bool  # the whole bundle is kept (else its report.json alone)
    bytes: int  # what the capture's directory holds now
    p99_ms: float | None = None  # the service's P99 from Prometheus (None: not read)
    p99_baseline_ms: float | None = None  # the last day's median before it (None: < 3)
    drift: bool = False  # P99 above the baseline by more than --drift
    drift_from: int | None = None  # the capture the drifted one was compared with
    comparison: str | None = None  # that comparison's compare.json, relative to the store

    @property
    def verdict(self) -> tuple[str, str | None]:
        return self.category, self.kind

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict_label(category: str, kind: str | None) -> str:
    return f"{category}/{kind}" if kind else category


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def row_values(report: Report | Mapping[str, Any], service: str) -> dict[str, Any]:
    """The index's columns taken from a report (all but id, path, kept_whole, bytes)."""
    verdict, capture, target = report["verdict"], report["capture"], report["target"]
    started = str(capture.get("started") or "")
    try:
        started_unix = datetime.fromisoformat(started).timestamp()
    except ValueError:
        started_unix = 0.0
    metrics = report["metrics"]
    return {
        "started": started,
        "started_unix": started_unix,
        "pid": int(target.get("pid") or 0),
        "service": service,
        "category": str(verdict.get("primary") or "unknown"),
        "kind": verdict.get("kind"),
        "confidence": _number(verdict.get("confidence")),
        "headline": str(verdict.get("headline") or ""),
        "metrics": {k: _number(metrics.get(k)) for k in KEY_METRICS},
        "duration_s": _number(capture.get("duration_actual")),
        "ended_by": str(capture.get("ended_by") or ""),
    }


def is_store(path: Path) -> bool:
    return path.is_dir() and (path / INDEX).is_file()


class Store:
    """A store open for writing (``diagnose watch``: :meth:`create`) or reading
    (:meth:`open`)."""

    def __init__(self, path: Path, held: SafeDir, db: sqlite3.Connection) -> None:
        self.path = path
        self.dir = held
        self.db = db
        self.db.row_factory = sqlite3.Row

    @classmethod
    def create(cls, path: Path) -> Store:
        """The store at ``path`` for one writer: created (0700) if missing, else one that is
        ours alone; a second watch on it is refused (:class:`Busy`, exit 9)."""
        try:
            held = SafeDir.private(path)
            held.subdir_fd((CAPTURES,), create=True)
        except (UnsafeDirectory, OSError) as exc:
            raise output_error(path, exc) from None
        try:
            fcntl.flock(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when we exit
        except OSError as exc:
            held.close()
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise Busy(
                    f"another diagnose watch writes to {path}; give another --store"
                ) from None
            raise output_error(path, exc) from None
        try:
            os.close(held.open_append(INDEX))  # made 0600 here, never through a link
            db = sqlite3.connect(held.anchored(INDEX), isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            held.close()
            raise output_error(path / INDEX, OSError(str(exc))) from None
        store = cls(path, held, db)
        store._check_version(create=True)
        return store

    @classmethod
    def open(cls, path: Path) -> Store:
        """An existing store, read-only (:class:`BadBundle`, exit 7, if it is none)."""
        if not is_store(path):
            raise BadBundle(f"{path} is not a diagnose watch store (no {INDEX})")
        try:
            held = SafeDir.open(path)
            anchored = held.anchored(INDEX, create_dirs=False)
            db = sqlite3.connect(f"file:{quote(str(anchored))}?mode=ro", uri=True)
        except (OSError, sqlite3.Error) as exc:
            raise BadBundle(f"cannot read the store {path}: {exc}") from None
        store = cls(path, held, db)
        store._check_version(create=False)
        return store

    def _check_version(self, create: bool) -> None:
        """A new index gets the schema; a writer brings an older one up to date, in one
        transaction; a reader reads it as it is; a newer one is refused."""
        try:
            version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
            if version == 0 and create:
                self.db.executescript(_SCHEMA + f"PRAGMA user_version = {INDEX_VERSION};")
                version = INDEX_VERSION
            while create and version in _MIGRATIONS:
                version += 1
                self.db.executescript(
                    f"BEGIN; {_MIGRATIONS[version - 1]} PRAGMA user_version = {version}; COMMIT;"
                )
        except sqlite3.Error as exc:
            self.close()
            raise BadBundle(f"{self.path / INDEX} is not a diagnose watch index: {exc}") from None
        if version not in READS_VERSIONS:
            self.close()
            raise BadBundle(
                f"{self.path / INDEX} is a watch index of version {version}; this diagnose "
                f"reads versions {', '.join(map(str, READS_VERSIONS))}"
            )

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()
        self.dir.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------------------

    def captures(self, since_id: int = 0) -> list[CaptureRow]:
        """Every capture (after ``since_id``), oldest first."""
        try:
            rows = self.db.execute(
                "SELECT * FROM captures WHERE id > ? ORDER BY started_unix, id", (since_id,)
            ).fetchall()
            return [_row(r) for r in rows]
        except (sqlite3.Error, ValueError, TypeError, KeyError) as exc:
            raise BadBundle(f"{self.path / INDEX} cannot be read: {exc}") from None

    def latest(self) -> CaptureRow | None:
        rows = self.captures()
        return rows[-1] if rows else None

    def readings(self, since_unix: float) -> list[float]:
        """The P99 readings (ms) of the captures started since ``since_unix``, oldest first."""
        if not self._has_latency():
            return []
        rows = self.db.execute(
            "SELECT p99_ms FROM captures WHERE p99_ms IS NOT NULL AND started_unix >= ? "
            "ORDER BY started_unix, id",
            (since_unix,),
        ).fetchall()
        return [v for (v,) in rows if _number(v) is not None]

    def last_steady(self) -> CaptureRow | None:
        """The newest capture with a P99 reading that did not drift: the one a drift is
        compared with (the last before it began)."""
        if not self._has_latency():
            return None
        r = self.db.execute(
            "SELECT * FROM captures WHERE p99_ms IS NOT NULL AND drift = 0 "
            "ORDER BY started_unix DESC, id DESC LIMIT 1"
        ).fetchone()
        return None if r is None else _row(r)

    def _has_latency(self) -> bool:
        """Whether the index has the latency columns (a version-1 index read as it is)."""
        return int(self.db.execute("PRAGMA user_version").fetchone()[0]) >= 2

    def report(self, row: CaptureRow) -> Report:
        """The report.json of ``row`` (read through the store's descriptor)."""
        rel = f"{row.path}/{REPORT}"
        try:
            with self.dir.sub(row.path) as sub:  # not cached in the store's descriptor
                data = sub.read_bytes(REPORT, MAX_REPORT_BYTES + 1)
        except (OSError, ValueError) as exc:
            raise BadBundle(f"{self.path / rel} cannot be read: {exc}") from None
        if len(data) > MAX_REPORT_BYTES:
            raise BadBundle(f"{self.path / rel} is too large to be a report")
        return parse_report(data, self.path / rel)

    def size_of(self, rel: str) -> int:
        try:
            with self.dir.sub(rel) as sub:
                return sum(size for _, size in sub.walk_sizes())
        except (OSError, ValueError):
            return 0

    def total_bytes(self) -> int:
        row = self.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM captures").fetchone()
        index = self.dir.lstat(INDEX)
        return int(row[0]) + (index.st_size if index else 0)

    # -- writing ------------------------------------------------------------------------

    def add(self, values: Mapping[str, Any], path: str, kept_whole: bool) -> CaptureRow:
        split_member(path)
        cols = {**values, "path": path, "kept_whole": int(kept_whole), "bytes": self.size_of(path)}
        cols["metrics"] = json.dumps(cols["metrics"], allow_nan=False)
        names = ", ".join(cols)
        marks = ", ".join("?" for _ in cols)
        cur = self.db.execute(
            f"INSERT INTO captures ({names}) VALUES ({marks})",  # noqa: S608 - our column names
            tuple(cols.values()),
        )
        return self._get(int(cur.lastrowid or 0))

    def _get(self, row_id: int) -> CaptureRow:
        return _row(self.db.execute("SELECT * FROM captures WHERE id = ?", (row_id,)).fetchone())

    def keep_report_only(self, path: str) -> None:
        """Of the capture at ``path``, delete all but its report.json."""
        with self.dir.sub(path) as sub:
            sub.clear(keep=frozenset({REPORT}))

    def remove(self, row: CaptureRow) -> None:
        """Delete a capture's directory and its row."""
        with contextlib.suppress(FileNotFoundError):
            self.dir.remove_tree(row.path)
        self.db.execute("DELETE FROM captures WHERE id = ?", (row.id,))

    def prune(self, now: float, keep_s: float, max_bytes: int) -> list[CaptureRow]:
        """Retention: captures older than ``keep_s``, then the oldest until the store holds
        at most ``max_bytes``. The newest capture is always kept. Returns those removed."""
        rows = self.captures()
        if not rows:
            return []
        newest = rows[-1]
        gone = [r for r in rows[:-1] if now - r.started_unix > keep_s]
        left = [r for r in rows if r not in gone]
        total = self.total_bytes() - sum(r.bytes for r in gone)
        for r in left[:-1]:
            if total <= max_bytes:
                break
            gone.append(r)
            total -= r.bytes
        for r in gone:
            self.remove(r)
        assert newest not in gone
        return gone


def _row(r: sqlite3.Row) -> CaptureRow:
    metrics = json.loads(r["metrics"])
    if not isinstance(metrics, dict):
        raise ValueError("metrics is not an object")
    new = r.keys()  # a version-1 index has none of the latency columns
    latency = {k: r[k] for k in ("p99_ms", "p99_baseline_ms", "drift", "drift_from",
                                  "comparison") if k in new}  # fmt: skip
    return CaptureRow(
        id=int(r["id"]),
        started=str(r["started"]),
        started_unix=float(r["started_unix"]),
        pid=int(r["pid"]),
        service=str(r["service"]),
        category=str(r["category"]),
        kind=None if r["kind"] is None else str(r["kind"]),
        confidence=_number(r["confidence"]),
        headline=str(r["headline"]),
        metrics={str(k): _number(v) for k, v in metrics.items()},
        duration_s=_number(r["duration_s"]),
        ended_by=str(r["ended_by"]),
        path=str(r["path"]),
        kept_whole=bool(r["kept_whole"]),
        bytes=int(r["bytes"]),
        p99_ms=_number(latency.get("p99_ms")),
        p99_baseline_ms=_number(latency.get("p99_baseline_ms")),
        drift=bool(latency.get("drift")),
        drift_from=None if latency.get("drift_from") is None else int(latency["drift_from"]),
        comparison=None if latency.get("comparison") is None else str(latency["comparison"]),
    )


def iter_reports(store: Store) -> Iterator[tuple[CaptureRow, Report]]:
    """Each capture with its report, oldest first (those whose report is unreadable are
    left out)."""
    for row in store.captures():
        with contextlib.suppress(BadBundle):
            yield row, store.report(row)
