"""The large tables as Parquet, once the capture has ended (docs/bundle.md, "Large tables
as Parquet").

Collectors stream their tables as CSV: rows are appended as they come, a capture cut short
keeps every whole row, and nothing holds them in memory. Once the collectors have finished,
each large table (``compaction.COMPACTED``, at least ``PARQUET_MIN_BYTES`` with ``auto``)
is rewritten as ``NAME.parquet`` (zstd; bundle/compaction.py) and its CSV removed: on a
10-minute, 256-thread bundle its three tables over the threshold went from 206.6 to 39.3 MiB
(docs/performance.md, section 4).

The table is read the way the analysis reads a CSV (pandas, every column's type inferred
over the whole file), and Parquet keeps those types, so the analysis reads the same frame
from either. Text cells keep the spreadsheet guard they were written with; the reader
undoes it for both. A table that does not convert stays CSV, and the manifest says why
(``capture.tables``). ``--tables csv`` keeps every table CSV.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from diagnose.escape import CSV_GUARD, csv_uncell

# Text columns as Python strings, not Arrow's (pandas' default once pyarrow is installed): the
# analysis takes, groups and compares millions of short strings (states, thread names,
# frames), and on the 10-minute, 256-thread bundle of docs/performance.md Arrow strings made
# the report 14 s -> 16 s and 1.0 -> 1.6 GiB. Set here, where every table is read (the reader
# and the capture's conversion to Parquet both read through this module).
pd.set_option("mode.string_storage", "python")


def read_csv_rows(fd: int) -> pd.DataFrame:
    """A CSV table as the analysis reads it: types inferred over the whole file, rows cut
    short dropped (the last one, when diagnose was stopped mid-write). Text cells are left as
    written (guarded), as Python strings (this module sets pandas' string storage on
    import). Takes ownership of ``fd``."""
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        whole_rows = size == 0 or os.pread(fh.fileno(), 1, size - 1) == b"\n"
        df = pd.read_csv(fh, on_bad_lines="skip", low_memory=False)
    if len(df) and not whole_rows:
        df = df.iloc[:-1]
    return df


def read_parquet_rows(fd: int, unguard: bool = False) -> pd.DataFrame:
    """A Parquet table written by :func:`diagnose.bundle.compaction.convert_table`, as
    :func:`read_csv_rows` reads its CSV. Takes ownership of ``fd``.

    Text columns are read dictionary-encoded and each distinct text becomes one Python
    string shared by its rows: read as one string per row, the 10-minute 256-thread bundle's
    report peaked at 1.3 GiB against 1.0 GiB from its CSV. With ``unguard`` the spreadsheet
    guard is undone (:func:`diagnose.escape.csv_uncell`) on those distinct texts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with os.fdopen(fd, "rb") as fh:
        texts = [
            f.name
            for f in pq.ParquetFile(fh).schema_arrow
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
        ]
        fh.seek(0)
        table = pq.read_table(fh, read_dictionary=texts)
    df: pd.DataFrame = table.to_pandas(self_destruct=True, split_blocks=True)
    del table
    pa.default_memory_pool().release_unused()  # Arrow's allocator keeps what it freed
    for col in texts:
        cat = df[col].array
        values = np.asarray(cat.categories, dtype=object)
        if unguard:
            for i, v in enumerate(values):
                if isinstance(v, str) and v[:1] == CSV_GUARD:
                    values[i] = csv_uncell(v)
        codes = np.asarray(cat.codes)
        if len(values):
            cells = np.where(codes >= 0, values[np.maximum(codes, 0)], np.nan)
        else:
            cells = np.full(len(codes), np.nan, dtype=object)
        df[col] = pd.Series(cells, index=df.index, dtype=_TEXT)
    return df


#: the dtype pandas' read_csv gives text columns (see diagnose.bundle.reader)
_TEXT: Any = (
    pd.StringDtype("python", na_value=np.nan) if int(pd.__version__.split(".")[0]) >= 3 else object
)
