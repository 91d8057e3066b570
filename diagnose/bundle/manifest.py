"""manifest.json: what was captured, from what, how, and how each collector fared."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from diagnose.bundle.schema import check_structure, validate
from diagnose.bundle.sections import CaptureInfo, HostInfo, TargetInfo
from diagnose.errors import BadBundle

SCHEMA = "diagnose.bundle"
SCHEMA_VERSION = 1
CSV_GUARDED = "guarded"
#: --tables: the large tables as Parquet from a size on (auto), never (csv), always (parquet);
#: bundle/columnar.py converts them, ``capture.tables`` records what it did
TABLE_FORMATS = ("auto", "csv", "parquet")


class CollectorStatus(str, Enum):
    OK = "ok"  # ran for the whole window
    PARTIAL = "partial"  # recorded something, but not all of the window (or was capped)
    UNAVAILABLE = "unavailable"  # this host or target cannot provide it; reason says why
    FAILED = "failed"  # should have worked but did not; reason says what went wrong

    def __str__(self) -> str:
        return self.value


@dataclass
class CollectorRecord:
    name: str
    status: CollectorStatus
    reason: str = ""
    files: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "reason": self.reason,
            "files": list(self.files),
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, name: str, data: Any) -> CollectorRecord:
        if not isinstance(data, dict):
            raise BadBundle(f"manifest.json: collector {name!r} is not an object")
        try:
            status = CollectorStatus(data.get("status"))
        except ValueError:
            raise BadBundle(
                f"manifest.json: collector {name!r} has unknown status {data.get('status')!r}"
            ) from None
        files = data.get("files", [])
        details = data.get("details", {})
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise BadBundle(f"manifest.json: collector {name!r} has a bad file list")
        if not isinstance(details, dict):
            raise BadBundle(f"manifest.json: collector {name!r} has bad details")
        return cls(name, status, str(data.get("reason", "")), files, details)


@dataclass
class Manifest:
    """The bundle's table of contents. ``state`` is ``capturing`` until the capture ended."""

    tool_version: str
    target: TargetInfo = field(default_factory=TargetInfo)
    host: HostInfo = field(default_factory=HostInfo)
    capture: CaptureInfo = field(default_factory=CaptureInfo)
    collectors: dict[str, CollectorRecord] = field(default_factory=dict)
    state: str = "capturing"  # capturing | complete
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION
    # "guarded": text cells of the CSV tables carry diagnose.escape.csv_cell's formula guard
    # (readers undo it); absent in bundles written before it
    csv_text: str = ""

    @property
    def csv_guarded(self) -> bool:
        return self.csv_text == CSV_GUARDED

    def to_dict(self) -> dict[str, Any]:
        d = {
            "schema": self.schema,
            "schema_version": self.schema_version,
            "tool_version": self.tool_version,
            "state": self.state,
            "target": self.target.to_dict(),
            "host": self.host.to_dict(),
            "capture": self.capture.to_dict(),
            "collectors": {name: rec.to_dict() for name, rec in self.collectors.items()},
        }
        if self.csv_text:
            d["csv_text"] = self.csv_text
        return d

    @classmethod
    def from_dict(cls, data: Any) -> Manifest:
        if not isinstance(data, dict):
            raise BadBundle("manifest.json is not a JSON object")
        check_structure(data, "manifest.json")  # depth and numbers before anything reads it
        if data.get("schema") != SCHEMA:
            raise BadBundle(
                f"manifest.json is not a diagnose bundle (schema {data.get('schema')!r})"
            )
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise BadBundle("manifest.json has no integer schema_version")
        if version > SCHEMA_VERSION:
            raise BadBundle(
                f"bundle schema version {version} is newer than this diagnose understands "
                f"({SCHEMA_VERSION}); upgrade diagnose"
            )
        if version < 1:
            raise BadBundle(f"bundle schema version {version} is unknown")
        sections: dict[str, dict[str, Any]] = {}
        for key in ("target", "host", "capture"):
            value = data.get(key)
            if not isinstance(value, dict):
                raise BadBundle(f"manifest.json: {key!r} is missing or not an object")
            sections[key] = value
        collectors_raw = data.get("collectors", {})
        if not isinstance(collectors_raw, dict):
            raise BadBundle("manifest.json: 'collectors' is not an object")
        state = data.get("state", "capturing")
        if state not in ("capturing", "complete"):
            raise BadBundle(f"manifest.json: unknown state {state!r}")
        collectors = {  # their own messages first
            str(name): CollectorRecord.from_dict(str(name), rec)
            for name, rec in collectors_raw.items()
        }
        validate(data, "manifest.json")  # then the type and depth of every field (schema.py)
        return cls(
            tool_version=str(data.get("tool_version", "?")),
            target=TargetInfo.from_dict(sections["target"]),
            host=HostInfo.from_dict(sections["host"]),
            capture=CaptureInfo.from_dict(sections["capture"]),
            collectors=collectors,
            state=state,
            schema_version=version,
            csv_text=str(data.get("csv_text", "")),
        )

    def replace(self, **changes: Any) -> Manifest:
        return dataclasses.replace(self, **changes)
