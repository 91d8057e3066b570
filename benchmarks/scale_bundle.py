"""Make a bigger bundle out of a recorded one: longer (in time) and wider (in threads).

For the analysis benchmark only: recording 10 minutes of 256 threads takes 10 minutes and
more, so the largest bundles are generated from a real recording instead, and the
benchmark says which ones are.

- **Time** (``--time K``): every table is repeated K times end to end, each copy shifted by
  the source's length ``T`` (the latest time in any table, rounded up to a /proc tick).
  Cumulative counters (CPU times, faults, schedstat, context switches, migrations, per-CPU
  jiffies, diagnose's own CPU) continue from copy to copy instead of restarting, so rates
  between ticks stay those of the recording.
- **Threads** (``--threads M``): every thread of the target appears M times; copy ``j`` of
  thread ``tid`` is ``tid + j * TID_STEP`` (beyond any real thread id), its Python name
  gets ``-cJ`` appended, and the threads that woke it (``waker``) are mapped to the same
  copy, so lock hand-overs stay within a copy. Futex addresses are kept: copies wait on
  the same locks.

The tables the analysis reads are rewritten: proc/threads.csv, process.csv, cpus.csv,
python/intervals.csv, threads.csv, gil.folded, native/samples.csv, sched/offcpu.csv,
futex.csv. Stack tables are copied as they are (the same stacks recur). Files the analysis
does not read (py-spy's raw traces, folded and speedscope files) are copied unscaled. The
manifest keeps every collector's status and says ``capture.generated``: how the bundle
was made. The verdict of a generated bundle is not a diagnosis of anything: it is a
workload of the right size for the analysis.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from diagnose.bundle.compaction import compact_tables, parquet_name
from diagnose.bundle.safedir import SafeDir
from diagnose.bundle.writer import BundleWriter
from diagnose.formats.stacks import ThreadFrame

TID_STEP = 1 << 22  # 4194304, the kernel's largest pid_max: no real thread id reaches it

#: table -> (time columns, tid columns, cumulative columns, group column for counters)
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str | None]] = {
    "proc/threads.csv": (
        ("t",),
        ("tid",),
        (
            "utime",
            "stime",
            "minflt",
            "majflt",
            "oncpu_ns",
            "runq_ns",
            "slices",
            "vcsw",
            "ivcsw",
            "migrations",
        ),
        "tid",
    ),
    "proc/process.csv": (("t",), (), ("minflt", "majflt", "utime", "stime", "tool_cpu_s"), None),
    "proc/cpus.csv": (("t",), (), ("busy_jiffies", "total_jiffies"), "cpu"),
    "python/intervals.csv": (("start", "end"), ("tid",), (), None),
    "native/samples.csv": (("t",), ("tid",), (), None),
    "sched/offcpu.csv": (("t",), ("tid", "waker"), (), None),
    "sched/futex.csv": (("t", "wake_t"), ("tid", "waker"), (), None),
}


def _read(path: Path) -> pd.DataFrame:
    """Every column as text, empty cells kept empty: what is not rewritten stays as it was.
    A table the capture rewrote as Parquet is read from it (numbers in Python's spelling)."""
    pq = path.with_suffix(".parquet")
    if not path.exists() and pq.exists():
        df = pd.read_parquet(pq)
        return df.astype(object).where(df.notna(), "").astype(str)
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _exists(path: Path) -> bool:
    return path.exists() or path.with_suffix(".parquet").exists()


def _num(col: pd.Series) -> pd.Series:
    return pd.to_numeric(col.replace("", np.nan), errors="coerce")


def _text(values: pd.Series, like: pd.Series) -> pd.Series:
    """Numbers back to text in the source column's style (integers stay integers)."""
    empty = values.isna()
    if not like.str.contains(".", regex=False).any():
        out = values.round().astype("Int64").astype(str)
    else:
        out = values.round(6).astype(str)
    return out.mask(empty, "")


def period(src: Path) -> float:
    """The source's length: the latest time in any table, rounded up to a /proc tick."""
    manifest = json.loads((src / "manifest.json").read_text())
    tick = 1.0 / float(manifest["capture"].get("proc_rate_hz") or 20)
    latest = float(manifest["capture"].get("duration_requested") or 0)
    for rel, (tcols, _, _, _) in TABLES.items():
        if _exists(src / rel):
            df = _read(src / rel)
            for c in tcols:
                if c in df and len(df):
                    latest = max(latest, float(_num(df[c]).max(skipna=True) or 0))
    return float(np.ceil(latest / tick + 1) * tick)


def scale_table(df: pd.DataFrame, rel: str, k: int, m: int, T: float) -> pd.DataFrame:
    tcols, tidcols, cumcols, group = TABLES[rel]
    cumcols = tuple(c for c in cumcols if c in df)
    nums = {c: _num(df[c]) for c in (*tcols, *cumcols) if c in df}
    if cumcols:
        keys = df[group] if group else pd.Series(0, index=df.index)
        delta = {c: nums[c].groupby(keys).transform(lambda s: s.max() - s.min()) for c in cumcols}
    parts = []
    for i in range(k):
        part = df.copy()
        for c in tcols:
            if c in df:
                part[c] = _text(nums[c] + i * T, df[c])
        for c in cumcols:
            part[c] = _text(nums[c] + i * delta[c], df[c])
        parts.append(part)
    out = pd.concat(parts, ignore_index=True) if k > 1 else parts[0]
    if m > 1 and tidcols:
        copies = []
        for j in range(m):
            part = out.copy()
            for c in tidcols:
                if c in out:
                    v = _num(out[c])
                    part[c] = _text(v + j * TID_STEP, out[c])
            copies.append(part)
        out = pd.concat(copies, ignore_index=True)
    if rel == "proc/process.csv" and m > 1 and "threads" in out:
        out["threads"] = _text(_num(out["threads"]) * m, out["threads"])
    sort = tcols[0]
    order = np.argsort(_num(out[sort]).to_numpy(), kind="stable")
    return out.iloc[order]


def _scale_folded(text: str, k: int, m: int) -> str:
    """py-spy raw lines ``thread (TID): NAME;frames COUNT``: counts x k, one line per copy."""
    out = []
    for line in text.splitlines():
        head, _, count = line.rpartition(" ")
        root, sep, frames = head.partition(";")
        thread = ThreadFrame.parse(root)
        if thread is None or not count.isdigit():
            continue
        for j in range(m):
            copy = ThreadFrame(thread.tid + j * TID_STEP, thread.name).format()
            out.append(f"{copy}{sep}{frames} {int(count) * k}")
    return "\n".join(out) + ("\n" if out else "")


def scale(src: Path, dst: Path, k: int = 1, m: int = 1) -> Path:
    """Write ``src`` scaled ``k`` times in time and ``m`` times in threads to ``dst``."""
    if dst.exists():
        raise SystemExit(f"{dst} exists")
    T = period(src)
    shutil.copytree(
        src, dst, ignore=shutil.ignore_patterns("report.*", "compare.*", ".reserve", "*.parquet")
    )
    for rel in TABLES:
        if _exists(src / rel):
            df = _read(src / rel)
            scale_table(df, rel, k, m, T).to_csv(dst / rel, index=False)
    names = src / "python/threads.csv"
    if names.exists() and m > 1:
        df = _read(names)
        copies = []
        for j in range(m):
            part = df.copy()
            part["tid"] = (_num(df["tid"]) + j * TID_STEP).astype("Int64").astype(str)
            if j and "name" in part:
                part["name"] = part["name"] + f"-c{j}"
            copies.append(part)
        pd.concat(copies, ignore_index=True).to_csv(dst / "python/threads.csv", index=False)
    gil = src / "python/gil.folded"
    if gil.exists():
        (dst / "python/gil.folded").write_text(_scale_folded(gil.read_text(), k, m))
        gil_json = dst / "python/gil.json"
        if gil_json.exists():
            n = json.loads(gil_json.read_text()).get("samples", 0)
            gil_json.write_text(json.dumps({"samples": n * k}))
    manifest = json.loads((src / "manifest.json").read_text())
    cap = manifest["capture"]
    cap["duration_requested"] = round(T * k, 3)
    cap["duration_actual"] = round(T * k, 3)
    cap["generated"] = {
        "from": str(src),
        "time_factor": k,
        "thread_factor": m,
        "period_s": T,
        "by": "benchmarks/scale_bundle.py",
    }
    # the tables as the capture leaves them: the large ones as Parquet
    writer = BundleWriter(SafeDir.open(dst))
    cap["tables"] = compact_tables(writer, "auto")
    writer.close()
    for rec in manifest.get("collectors", {}).values():
        files = [
            f[: -len(".parquet")] + ".csv" if f.endswith(".parquet") else f
            for f in rec.get("files", [])
        ]
        rec["files"] = [parquet_name(f) if f in cap["tables"]["parquet"] else f for f in files]
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return dst


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks scale-bundle", description=__doc__)
    p.add_argument("src", type=Path)
    p.add_argument("dst", type=Path)
    p.add_argument("--time", type=int, default=1, help="repeat K times end to end")
    p.add_argument("--threads", type=int, default=1, help="every thread M times")
    args = p.parse_args(argv)
    out = scale(args.src, args.dst, args.time, args.threads)
    print(out)


if __name__ == "__main__":
    main()
