"""Reading a bundle back: validate the manifest, load members, fail with one clear line.

A bundle may be partial (the capture was interrupted, the target exited, diagnose was
killed): whatever complete rows and documents it holds are still used. A member that is
corrupt raises :class:`~diagnose.errors.BadBundle` naming the file; callers that can do
without it catch that and mark the data as missing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus, Manifest
from diagnose.errors import BadBundle

MAX_JSON_BYTES = 512 * 1024 * 1024


class Bundle:
    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root = root
        self.manifest = manifest

    @classmethod
    def open(cls, root: str | Path) -> Bundle:
        root = Path(root)
        if not root.exists():
            raise BadBundle(f"bundle {root} does not exist")
        if not root.is_dir():
            raise BadBundle(f"{root} is not a bundle directory")
        mpath = root / "manifest.json"
        if not mpath.is_file():
            raise BadBundle(f"{root} has no manifest.json: not a diagnose bundle")
        data = _load_json_file(mpath)
        return cls(root, Manifest.from_dict(data))

    # -- members -------------------------------------------------------------------------

    def path(self, rel: str) -> Path:
        p = (self.root / rel).resolve()
        if not p.is_relative_to(self.root.resolve()):
            raise BadBundle(f"bundle member {rel!r} points outside the bundle")
        return p

    def has(self, rel: str) -> bool:
        try:
            return self.path(rel).is_file()
        except BadBundle:
            return False

    def json(self, rel: str) -> Any:
        p = self.path(rel)
        if not p.is_file():
            raise BadBundle(f"{rel} is missing from the bundle")
        return _load_json_file(p)

    def text(self, rel: str) -> str:
        p = self.path(rel)
        if not p.is_file():
            raise BadBundle(f"{rel} is missing from the bundle")
        try:
            return p.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise BadBundle(f"cannot read {rel}: {exc.strerror}") from exc

    def table(
        self, rel: str, required: Sequence[str], dtypes: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        """Load a CSV member. Rows cut short (a capture that was killed) are dropped."""
        p = self.path(rel)
        if not p.is_file():
            raise BadBundle(f"{rel} is missing from the bundle")
        try:
            df = pd.read_csv(p, on_bad_lines="skip", low_memory=False)
        except pd.errors.EmptyDataError:
            return pd.DataFrame({c: pd.Series(dtype="float64") for c in required})
        except (ValueError, UnicodeDecodeError, OSError, pd.errors.ParserError) as exc:
            raise BadBundle(f"{rel} is not a readable table: {_one_line(exc)}") from exc
        if len(df) and not _ends_with_newline(p):
            df = df.iloc[:-1]  # its last row was cut short: diagnose was stopped mid-write
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
            except (ValueError, TypeError) as exc:
                raise BadBundle(f"{rel}: column {col} has bad values: {_one_line(exc)}") from exc
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


def _ends_with_newline(p: Path) -> bool:
    try:
        with p.open("rb") as fh:
            fh.seek(-1, 2)
            return fh.read(1) == b"\n"
    except OSError:
        return True


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _load_json_file(p: Path) -> Any:
    try:
        size = p.stat().st_size
        if size > MAX_JSON_BYTES:
            raise BadBundle(f"{p.name} is {size} bytes, too large to be a bundle document")
        with p.open("rb") as fh:
            return json.loads(fh.read().decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise BadBundle(
            f"{p.name} is corrupt or truncated: {exc.msg} at line {exc.lineno}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise BadBundle(f"{p.name} is not UTF-8 text") from exc
    except RecursionError as exc:
        raise BadBundle(f"{p.name} is nested too deeply") from exc
    except OSError as exc:
        raise BadBundle(f"cannot read {p.name}: {exc.strerror}") from exc
