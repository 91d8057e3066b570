"""Reading a sweep's record (``sweep.json``) back, as input someone else may have written.

``diagnose report SWEEPDIR`` runs as root on directories users copy and edit, and
``diagnose compare`` finds a step's figures in the record above a bundle. Every field a
reader turns into a path (a setting's ``slug``, a step's ``bundle``) must name something
inside the sweep directory, and every field a reader computes with has its type, so a
crafted record is refused with one line (exit 7) before anything is read or written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from diagnose.bundle.safedir import read_regular
from diagnose.bundle.schema import (
    ANY,
    BOOL,
    INT,
    NAME,
    NUM,
    REL_PATH,
    STR,
    DictOf,
    ListOf,
    Obj,
    Opt,
    parse_json,
)
from diagnose.errors import BadBundle
from diagnose.sweep.loadgen import LoadFigures
from diagnose.sweep.plan import MAX_USERS

#: the record: its schema and file name in the sweep directory
SCHEMA = "diagnose.sweep"
SCHEMA_VERSION = 1
RECORD = "sweep.json"
#: a record of 12 settings x 20 steps is about 200 KiB
MAX_RECORD_BYTES = 16 * 1024 * 1024

_LOAD = Obj(
    {
        "tool": STR,
        "seconds": NUM,
        "requests": INT,
        "failures": INT,
        "p50_ms": Opt(NUM),
        "p95_ms": Opt(NUM),
        "p99_ms": Opt(NUM),
        "mean_ms": Opt(NUM),
        "max_ms": Opt(NUM),
        "errors": ListOf(Obj()),
        "extra": DictOf(ANY),
    },
    required=frozenset({"seconds", "requests"}),
)
_STEP = Obj(
    {
        "users": INT,
        "status": STR,
        "reason": Opt(STR),
        "dir": Opt(REL_PATH),
        "load_dir": Opt(REL_PATH),
        "bundle": Opt(REL_PATH),
        "load": Opt(_LOAD),
        "generator": Opt(
            Obj(
                {
                    "cpu_cores": Opt(NUM),
                    "host_busy_share": Opt(NUM),
                    "busiest_thread_demand": Opt(NUM),
                    "saturated": Opt(BOOL),
                }
            )
        ),
        "window": Opt(Obj({"capture_covers": Opt(NUM), "load_seconds": Opt(NUM)})),
        "capture": Opt(Obj()),
        "report_error": Opt(STR),
    },
    required=frozenset({"users", "status"}),
)
_SETTING = Obj(
    {
        "name": STR,
        "slug": NAME,
        "var": Opt(STR),
        "value": Opt(STR),
        "stopped_early": Opt(STR),
        "steps": ListOf(_STEP),
        "env": Opt(DictOf(STR)),
        "service": Opt(Obj()),
    },
    required=frozenset({"name", "slug", "steps"}),
)
SWEEP_RECORD = Obj(
    {
        "schema": STR,
        "schema_version": INT,
        "state": STR,
        "end_reason": Opt(STR),
        "load": Obj({"kind": STR, "tool": STR, "host": Opt(STR)}, required=frozenset({"tool"})),
        "host": Obj({"hostname": STR, "logical_cpus": Opt(INT)}),
        "steps_requested": ListOf(INT),
        "step_duration_s": Opt(NUM),
        "warmup_s": Opt(NUM),
        "sla_p99_ms": Opt(NUM),
        "peak_qps": Opt(NUM),
        "settings": ListOf(_SETTING),
    },
    required=frozenset({"schema", "settings", "load"}),
)


def is_sweep_dir(path: Path) -> bool:
    return (Path(path) / RECORD).is_file()


def load_record(sweep_dir: Path, trusted_only: bool = False) -> dict[str, Any]:
    """The record of ``sweep_dir``, checked field by field; :class:`BadBundle` otherwise.
    ``trusted_only``: refuse a record that a user other than us (or root) could have
    written, for a record found by looking around rather than named by the user."""
    path = Path(sweep_dir) / RECORD
    try:
        data, st = read_regular(path, MAX_RECORD_BYTES, follow=not trusted_only)
    except OSError as exc:
        raise BadBundle(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadBundle(f"{path}: {exc}") from None
    if trusted_only and (st.st_uid not in (0, os.geteuid()) or st.st_mode & 0o022):
        raise BadBundle(
            f"{path} is not used: it belongs to uid {st.st_uid} or others may write to it"
        )
    data_doc = parse_json(data, str(path))
    if not isinstance(data_doc, dict) or data_doc.get("schema") != SCHEMA:
        raise BadBundle(f"{path} is not a diagnose sweep record")
    version = data_doc.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise BadBundle(f"{path} is of a newer schema ({version}); upgrade diagnose")
    try:
        SWEEP_RECORD.check(data_doc, "")
        _check_figures(data_doc)
    except BadBundle as exc:
        raise BadBundle(f"{path}: {exc}") from None
    slugs = [s["slug"] for s in data_doc["settings"]]
    if len(set(slugs)) != len(slugs):
        raise BadBundle(f"{path}: two settings share a slug")
    return data_doc


def _check_figures(record: dict[str, Any]) -> None:
    for i, s in enumerate(record["settings"]):
        for j, step in enumerate(s["steps"]):
            if not 1 <= step["users"] <= MAX_USERS:
                raise BadBundle(f"settings[{i}].steps[{j}].users: not within 1..{MAX_USERS}")
            if isinstance(step.get("load"), dict):
                try:
                    LoadFigures.from_dict(step["load"])
                except (TypeError, ValueError) as exc:
                    raise BadBundle(f"settings[{i}].steps[{j}].load: {exc}") from None
