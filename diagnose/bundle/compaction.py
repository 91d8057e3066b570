"""Which of a bundle's tables are rewritten as Parquet once the capture has ended, and the
rewrite (docs/bundle.md, "Large tables as Parquet"). Free of pandas: a capture with no table
over :data:`PARQUET_MIN_BYTES` (most 10 s captures, and every worker's capture that
``--workers`` starts beside its service's) never imports it; the conversion itself is
:func:`convert_table`, which reads the table as :mod:`diagnose.bundle.columnar` does.
"""

from __future__ import annotations

import os
from typing import Any

from diagnose.bundle.writer import BundleWriter
from diagnose.errors import one_line

#: below this size a CSV table stays CSV with ``auto``: converting costs more than it saves
#: (the import of pyarrow alone is 0.2-0.4 s here), and anything reads a CSV
PARQUET_MIN_BYTES = 8 * 1024 * 1024
#: the tables that grow with the capture's length and the target's threads
COMPACTED = (
    "proc/threads.csv",
    "proc/process.csv",
    "proc/cpus.csv",
    "python/intervals.csv",
    "native/samples.csv",
    "sched/offcpu.csv",
    "sched/futex.csv",
)


def parquet_name(rel: str) -> str:
    """``proc/threads.csv`` -> ``proc/threads.parquet``."""
    return rel[: -len(".csv")] + ".parquet" if rel.endswith(".csv") else rel + ".parquet"


def compact_tables(
    writer: BundleWriter, fmt: str = "auto", min_bytes: int = PARQUET_MIN_BYTES
) -> dict[str, Any]:
    """Rewrite the bundle's large tables as Parquet (see the module doc). Returns the
    manifest's ``capture.tables``: the format asked for, and per table converted its sizes
    before and after, per table kept as CSV the reason."""
    record: dict[str, Any] = {"format": fmt, "min_bytes": min_bytes, "parquet": {}, "kept": {}}
    if fmt == "csv":
        return record
    for rel in COMPACTED:
        if not writer.is_file(rel):
            continue
        size = writer.size_of(rel)
        if fmt == "auto" and size < min_bytes:
            continue
        try:
            written = convert_table(writer, rel)
        except Exception as exc:  # the CSV is whole: keep it, say why
            record["kept"][rel] = f"{type(exc).__name__}: {one_line(exc)}"
            writer.unlink(parquet_name(rel))
            continue
        writer.unlink(rel)
        record["parquet"][rel] = {"csv_bytes": size, "parquet_bytes": written}
    return record


def convert_table(writer: BundleWriter, rel: str) -> int:
    """Rewrite the CSV table ``rel`` as Parquet beside it; the Parquet file's size."""
    # pandas and pyarrow (0.5 CPU-s to import) only where a table is converted
    from diagnose.bundle.columnar import read_csv_rows

    df = read_csv_rows(writer.dir.open_read(rel))
    target = parquet_name(rel)

    def fill(fd: int) -> None:
        with os.fdopen(os.dup(fd), "wb") as fh:
            df.to_parquet(fh, engine="pyarrow", compression="zstd", index=False)

    writer.dir.write_atomic(target, fill)
    return writer.size_of(target)
