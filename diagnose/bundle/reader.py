"""Reading a bundle back: validate the manifest, load members, fail with one clear line.

A bundle may be partial (the capture was interrupted, the target exited, diagnose was
killed): whatever complete rows and documents it holds are still used. A member that is
corrupt raises :class:`~diagnose.errors.BadBundle` naming the file; callers that can do
without it catch that and mark the data as missing.

A bundle may also come from someone else. Its directory is opened once
(:class:`~diagnose.bundle.safedir.SafeDir`) and every member is read from that descriptor
without following links (a member that is a symlink is refused, it may point anywhere),
only if it is a regular file (a FIFO would block); ``diagnose report`` writes its reports
through the same descriptor. Every JSON member passes :mod:`diagnose.bundle.schema`.
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from diagnose.bundle.columnar import read_csv_rows, read_parquet_rows
from diagnose.bundle.compaction import parquet_name
from diagnose.bundle.manifest import CollectorRecord, CollectorStatus, Manifest
from diagnose.bundle.safedir import SafeDir
from diagnose.bundle.schema import SCHEMAS, parse_json
from diagnose.errors import BadBundle, one_line
from diagnose.escape import CSV_GUARD as GUARD
from diagnose.escape import csv_uncell

MAX_JSON_BYTES = 512 * 1024 * 1024


class Bundle:
    def __init__(self, root: Path, manifest: Manifest, directory: SafeDir | None = None) -> None:
        self.root = Path(root)  # as the user gave it: for messages and the report
        self.manifest = manifest
        self.dir = directory

    @classmethod
    def open(cls, root: str | Path | SafeDir) -> Bundle:
        """Open the bundle directory (once) and read its manifest."""
        if isinstance(root, SafeDir):
            directory = root
        else:
            try:
                directory = SafeDir.open(root)
            except FileNotFoundError:
                raise BadBundle(f"bundle {root} does not exist") from None
            except NotADirectoryError:
                raise BadBundle(f"{root} is not a bundle directory") from None
            except OSError as exc:
                raise BadBundle(f"cannot open bundle {root}: {exc.strerror}") from None
        if not directory.is_file("manifest.json"):
            directory.close()
            raise BadBundle(f"{directory.display} has no manifest.json: not a diagnose bundle")
        try:
            data = _load_json(directory, "manifest.json")
            manifest = Manifest.from_dict(data)
        except BaseException:
            directory.close()
            raise
        return cls(directory.display, manifest, directory)

    def close(self) -> None:
        if self.dir is not None:
            self.dir.close()

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- members -------------------------------------------------------------------------

    def _dir(self) -> SafeDir:
        if self.dir is None:
            raise BadBundle(f"bundle {self.root} is not open")
        return self.dir

    def path(self, rel: str) -> Path:
        """The member's path, for messages (members are read with :meth:`open_member`)."""
        return self.root / rel

    def has(self, rel: str) -> bool:
        """Is member ``rel`` there (a table also as the Parquet it was rewritten as)?"""
        if self.dir is None:
            return False
        return self.dir.is_file(rel) or (
            rel.endswith(".csv") and self.dir.is_file(parquet_name(rel))
        )

    def open_member(self, rel: str) -> int:
        """A read descriptor of member ``rel``: a regular file inside the bundle, or
        BadBundle saying why not."""
        d = self._dir()
        try:
            return d.open_read(rel)
        except ValueError as exc:
            raise BadBundle(str(exc)) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and d.lstat(rel) is None):
                raise BadBundle(
                    f"bundle member {rel!r} is a symbolic link, which may point outside the "
                    "bundle: not read"
                ) from None
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                raise BadBundle(f"{rel} is missing from the bundle") from None
            if exc.errno == errno.EISDIR:
                raise BadBundle(f"{rel} is not a regular file") from None
            raise BadBundle(f"cannot read {rel}: {exc.strerror}") from None

    def read_bytes(self, rel: str) -> bytes:
        fd = self.open_member(rel)
        try:
            with os.fdopen(fd, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise BadBundle(f"cannot read {rel}: {exc.strerror}") from exc

    def json(self, rel: str) -> Any:
        """Member ``rel`` parsed and validated (:mod:`diagnose.bundle.schema`)."""
        return _load_json(self._dir(), rel, self)

    def text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8", errors="replace")

    def table(
        self, rel: str, required: Sequence[str], dtypes: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        """Load a table: CSV member ``rel``, or the Parquet it was rewritten as when the
        capture ended (:mod:`diagnose.bundle.columnar`). Rows cut short (a capture that was
        killed) are dropped."""
        member = rel
        if not self._dir().is_file(rel) and self._dir().is_file(parquet_name(rel)):
            member = parquet_name(rel)
        fd = self.open_member(member)
        try:
            if member != rel:
                guarded = False  # undone on each distinct text as it is read
                df = read_parquet_rows(fd, unguard=self.manifest.csv_guarded)
            else:
                try:
                    size = os.fstat(fd).st_size
                    guarded = self.manifest.csv_guarded and _has_guarded_cell(fd, size)
                except BaseException:
                    os.close(fd)
                    raise
                df = read_csv_rows(fd)  # pandas reads the file itself: no copy in memory
        except pd.errors.EmptyDataError:
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in required})
        except ImportError as exc:
            raise BadBundle(f"{member} needs pyarrow to be read: {one_line(exc)}") from exc
        except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as exc:
            raise BadBundle(f"{member} is not a readable table: {one_line(exc)}") from exc
        if guarded:
            _unguard(df)
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise BadBundle(f"{rel} lacks column(s) {', '.join(missing)}")
        df = df.dropna(subset=list(required))
        for col, dtype in (dtypes or {}).items():
            if col not in df.columns:
                continue
            try:
                if dtype in ("float", float):
                    df[col] = pd.to_numeric(df[col], errors="raise").astype("float64")
                elif dtype in ("int", int):
                    df[col] = pd.to_numeric(df[col], errors="raise").astype("int64")
                else:
                    df[col] = df[col].astype(dtype)
            except (ValueError, TypeError, OverflowError) as exc:
                raise BadBundle(f"{rel}: column {col} has bad values: {one_line(exc)}") from exc
        return df.reset_index(drop=True)

    # -- collectors ----------------------------------------------------------------------

    def collector(self, name: str) -> CollectorRecord:
        rec = self.manifest.collectors.get(name)
        if rec is None:
            return CollectorRecord(name, CollectorStatus.UNAVAILABLE, "not run in this capture")
        return rec

    def usable(self, name: str) -> bool:
        """True when collector ``name`` recorded data (ok or partial)."""
        return self.collector(name).status in (CollectorStatus.OK, CollectorStatus.PARTIAL)


_GUARD = GUARD.encode()
#: where a guarded cell can start: after a separator or a line break, quoted or not
_CELL_STARTS = tuple(sep + q + _GUARD for sep in (b",", b"\n") for q in (b"", b'"'))


def _has_guarded_cell(fd: int, size: int) -> bool:
    """Could a cell of this file carry the formula guard? (A scan of the mapped file with
    ``find``, which runs at memory speed: most tables have none, and then the columns need
    not be looked at.)"""
    if size == 0:
        return False
    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
        if data.find(_GUARD) < 0:
            return False
        if data[:1] == _GUARD or data[:2] == b'"' + _GUARD:
            return True
        return any(data.find(start) >= 0 for start in _CELL_STARTS)


def _unguard(df: pd.DataFrame) -> None:
    """Undo :func:`diagnose.escape.csv_cell` in every text column. A table may have millions
    of rows but few distinct texts (thread names, states, frames): only those are changed."""
    for col in df.columns:
        series = df[col]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        codes, uniques = pd.factorize(series)
        values = np.asarray(uniques, dtype=object)
        hit = [i for i, u in enumerate(values) if isinstance(u, str) and u[:1] == GUARD]
        if not hit:
            continue
        for i in hit:
            values[i] = csv_uncell(values[i])
        restored = np.where(codes >= 0, values[np.maximum(codes, 0)], np.asarray(None))
        df[col] = pd.Series(restored, index=df.index, dtype=object).astype(series.dtype)


def _load_json(directory: SafeDir, rel: str, bundle: Bundle | None = None) -> Any:
    st = directory.lstat(rel)
    if st is not None and st.st_size > MAX_JSON_BYTES:
        raise BadBundle(f"{rel} is {st.st_size} bytes, too large to be a bundle document")
    if bundle is not None:
        data = bundle.read_bytes(rel)
    else:
        data = Bundle(directory.display, _EMPTY, directory).read_bytes(rel)
    if rel == "manifest.json":  # Manifest.from_dict validates it, with its own messages first
        return parse_json(data, rel)
    return parse_json(data, rel, SCHEMAS.get(rel))


_EMPTY = Manifest(tool_version="")
