"""The one validation layer for a bundle's JSON members: types, depth, finite numbers.

A bundle may come from anyone (attached to a ticket), so every JSON document is checked as
it is read (:meth:`diagnose.bundle.reader.Bundle.json`, and the manifest), before any other
code sees it:

1. the whole document: at most :data:`MAX_DEPTH` levels of nesting, every number finite and
   within 64-bit range (``1e400`` parses as infinity; a 4000-digit integer makes arithmetic
   overflow), every object key a string;
2. the members diagnose knows (:data:`SCHEMAS`): each field's type. Fields may be missing
   (readers use defaults) and unknown fields are allowed (newer versions add some), but a
   field that is present has the documented type.

A document that fails is :class:`~diagnose.errors.BadBundle` with one line naming the
member and the field (``c2c/lines.json: lines[0].hitm: expected an integer, got a
string``): the manifest makes the bundle unusable (exit 7); any other member is reported
as not usable, and the report goes on without it.

Hand-written (about 150 lines) rather than a library: the documents are few and small, the
checks that matter most (depth, finite numbers) are not what JSON Schema validators check,
and jsonschema would add five packages, one of them compiled, for this.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from diagnose.errors import BadBundle

MAX_DEPTH = 32  # real documents nest 5 levels deep
INT_LIMIT = 2**63


class Spec:
    """A type a JSON value must have; ``what`` names it in messages."""

    what = "a value"

    def check(self, value: Any, where: str) -> None:
        raise NotImplementedError


class _Any(Spec):
    what = "any value"

    def check(self, value: Any, where: str) -> None:
        pass


@dataclass(frozen=True)
class _Scalar(Spec):
    types: tuple[type, ...]
    what: str = "a value"

    def check(self, value: Any, where: str) -> None:
        if isinstance(value, bool) and bool not in self.types:
            _fail(where, self.what, value)
        if not isinstance(value, self.types):
            _fail(where, self.what, value)


@dataclass(frozen=True)
class Opt(Spec):
    """``inner`` or null."""

    inner: Spec

    @property
    def what(self) -> str:  # type: ignore[override]
        return f"{self.inner.what} or null"

    def check(self, value: Any, where: str) -> None:
        if value is not None:
            self.inner.check(value, where)


@dataclass(frozen=True)
class ListOf(Spec):
    item: Spec
    what: str = "a list"

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list):
            _fail(where, self.what, value)
        for i, v in enumerate(value):
            self.item.check(v, f"{where}[{i}]")


@dataclass(frozen=True)
class DictOf(Spec):
    """An object whose keys are free and whose values all have one type."""

    value: Spec
    what: str = "an object"

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, self.what, value)
        for k, v in value.items():
            self.value.check(v, f"{where}.{k}" if where else str(k))


@dataclass(frozen=True)
class Obj(Spec):
    """An object with known fields (each optional unless ``required``, typed when present)
    and others free."""

    fields: Mapping[str, Spec] = field(default_factory=dict)
    what: str = "an object"
    required: frozenset[str] = frozenset()

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            _fail(where, self.what, value)
        missing = sorted(self.required - set(value))
        if missing:
            raise BadBundle(f"{where or 'the document'}: lacks {', '.join(missing)}")
        for k, spec in self.fields.items():
            if k in value:
                spec.check(value[k], f"{where}.{k}" if where else k)


@dataclass(frozen=True)
class _PathSpec(Spec):
    """A string naming something inside the directory a document describes: relative, no
    ``..``, no empty or ``.`` parts, no NUL, and one component unless ``nested``."""

    nested: bool
    what: str = "a name"

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, str):
            _fail(where, self.what, value)
        parts = value.split("/")
        bad = (
            not value
            or len(value.encode("utf-8", "replace")) > 1024
            or "\0" in value
            or value.startswith("/")
            or any(p in ("", ".", "..") for p in parts)
            or (len(parts) > 1 and not self.nested)
        )
        if bad:
            raise BadBundle(f"{where}: {value[:80]!r} is not {self.what}")


ANY: Spec = _Any()
STR: Spec = _Scalar((str,), "a string")
INT: Spec = _Scalar((int,), "an integer")
NUM: Spec = _Scalar((int, float), "a number")
BOOL: Spec = _Scalar((bool,), "true or false")
#: one directory entry's name; a relative path below the document's directory
NAME: Spec = _PathSpec(False, "a file name (one component, no '..')")
REL_PATH: Spec = _PathSpec(True, "a relative path inside the directory (no '..')")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _fail(where: str, what: str, value: Any) -> None:
    raise BadBundle(f"{where or 'the document'}: expected {what}, got {_kind(value)}")


def check_structure(doc: Any, name: str, max_depth: int = MAX_DEPTH) -> None:
    """Depth, finite numbers in range, string keys: over the whole document, iteratively
    (no recursion, however deep the document)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                raise BadBundle(f"{name} is nested too deeply (more than {max_depth} levels)")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items)
        elif isinstance(value, float):
            if not math.isfinite(value) or abs(value) >= 1e300:
                raise BadBundle(f"{name} holds a number out of range ({value!r})")
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not -INT_LIMIT <= value < INT_LIMIT
        ):
            raise BadBundle(f"{name} holds an integer out of range")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"holds a number out of range ({name} is not a JSON number)")


def parse_json(data: bytes | str, name: str, spec: Spec | None = None) -> Any:
    """Parse a document a user may have crafted: UTF-8 JSON (no NaN or Infinity), then
    :func:`check_structure`, then ``spec`` if given. Any failure is :class:`BadBundle` with one
    line naming ``name``; never another exception, however deep or odd the input."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise BadBundle(f"{name} is corrupt or truncated: {exc.msg} at line {exc.lineno}") from None
    except UnicodeDecodeError:
        raise BadBundle(f"{name} is not UTF-8 text") from None
    except RecursionError:
        raise BadBundle(f"{name} is nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, an integer of thousands of digits
        raise BadBundle(f"{name} is not valid JSON: {' '.join(str(exc).split())[:200]}") from None
    check_structure(doc, name)
    if spec is not None:
        try:
            spec.check(doc, "")
        except BadBundle as exc:
            raise BadBundle(f"{name}: {exc}") from None
    return doc


def validate(doc: Any, rel: str) -> Any:
    """Check document ``doc`` of member ``rel``; return it unchanged, or raise BadBundle."""
    check_structure(doc, rel)
    spec = SCHEMAS.get(rel)
    if spec is not None:
        try:
            spec.check(doc, "")
        except BadBundle as exc:
            raise BadBundle(f"{rel}: {exc}") from None
    return doc


# --- the members diagnose writes ------------------------------------------------------------

_STRS = ListOf(STR, "a list of strings")
_INTS = ListOf(INT, "a list of integers")

MANIFEST = Obj(
    {
        "schema": STR,
        "schema_version": INT,
        "tool_version": STR,
        "state": STR,
        "csv_text": STR,
        "target": Obj(
            {
                "pid": INT,
                "comm": STR,
                "exe": STR,
                "cmdline": _STRS,
                "is_python": BOOL,
                "python_version": Opt(STR),
                "followed_from": Opt(INT),
                "siblings": _INTS,
                "note": STR,
                "selection": STR,
                "left_out": ListOf(Obj({"pid": INT, "comm": STR, "why": STR})),
            }
        ),
        "host": Obj({"hostname": STR, "logical_cpus": Opt(INT), "machine": STR}),
        "capture": Obj(
            {
                "started": STR,
                "ended": Opt(STR),
                "monotonic_start": NUM,
                "duration_requested": NUM,
                "duration_actual": Opt(NUM),
                "window_start_s": NUM,
                "finish_s": NUM,
                "rate_hz": NUM,
                "proc_rate_hz": NUM,
                "py_spy_mode": STR,
                "command": _STRS,
                "collectors_requested": Opt(_STRS),
                "running": _STRS,
                "ended_by": Opt(STR),
                "safety_note": STR,
                "run": Opt(
                    Obj(
                        {
                            "argv": _STRS,
                            "pid": INT,
                            "exit_code": Opt(INT),
                            "signal": Opt(STR),
                            "ran_s": NUM,
                            "description": STR,
                        }
                    )
                ),
                "tables": Opt(
                    Obj(
                        {
                            "format": STR,
                            "min_bytes": INT,
                            "parquet": DictOf(Obj({"csv_bytes": INT, "parquet_bytes": INT})),
                            "kept": DictOf(STR),
                        }
                    )
                ),
                "cpu_budget": Opt(
                    Obj(
                        {
                            "budget_cores": NUM,
                            "threads": INT,
                            "estimated_cores": NUM,
                            "rates_hz": DictOf(INT),
                            "thinned": _STRS,
                        }
                    )
                ),
            }
        ),
        "collectors": DictOf(
            Obj({"status": STR, "reason": STR, "files": _STRS, "details": DictOf(ANY)})
        ),
    }
)

SYSTEM = Obj(
    {
        "host": DictOf(ANY),
        "cpu": Obj(
            {
                "logical_cpus": Opt(INT),
                "physical_cores": Opt(INT),
                "caches": ListOf(DictOf(ANY)),
                "numa_nodes": DictOf(ANY),
            }
        ),
        "capacity": Obj(
            {
                "usable_cpus": _INTS,
                "affinity": _INTS,
                "cores_available": Opt(NUM),
                "quota_cores": Opt(NUM),
            }
        ),
        "python": Obj(
            {
                "is_python": BOOL,
                "version": Opt(STR),
                "elf": Opt(STR),
                "runtime": Opt(Obj({"start": STR, "end": STR})),
            }
        ),
        "libraries": DictOf(_STRS),
        "env": DictOf(STR),
        "data_segments": Opt(ListOf(Obj({"library": STR, "start": STR, "end": STR}))),
        "touched": Opt(Obj({"bytes": INT, "seconds": NUM})),
    }
)

_C2C_ACCESS = Obj(
    {
        "offset": STR,
        "code_address": STR,
        "symbol": STR,
        "object": STR,
        "source": STR,
        "pid": Opt(INT),
        "tid": Opt(INT),
        "thread": STR,
        "remote_pct": Opt(NUM),
        "local_pct": Opt(NUM),
        "records": Opt(INT),
        "cpus": Opt(INT),
    }
)
C2C_LINES = Obj(
    {
        "summary": DictOf(Opt(NUM)),
        "details": DictOf(ANY),
        "metric": STR,
        "lines": ListOf(
            Obj(
                {
                    "index": INT,
                    "address": STR,
                    "node": STR,
                    "share": Opt(NUM),
                    "hitm": Opt(INT),
                    "hitm_local": Opt(INT),
                    "hitm_remote": Opt(INT),
                    "records": Opt(INT),
                    "loads": Opt(INT),
                    "stores": Opt(INT),
                    "sort_column": STR,
                    "offsets": _STRS,
                    "accesses": ListOf(_C2C_ACCESS),
                }
            )
        ),
    }
)

#: member -> its schema; every other JSON member gets the structural checks only
SCHEMAS: dict[str, Spec] = {
    "manifest.json": MANIFEST,
    "system.json": SYSTEM,
    "c2c/lines.json": C2C_LINES,
    "python/gil.json": Obj({"samples": INT}),
    "workers.json": Obj(
        {"workers": ListOf(Obj({"pid": INT, "dir": STR, "status": STR, "reason": STR}))}
    ),
    "python/calls.json": DictOf(ListOf(_STRS)),
}
