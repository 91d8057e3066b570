"""pprof's profile.proto (github.com/google/pprof, proto/profile.proto), built as protobuf
message types at test time: what the tests decode diagnose's pprof files with, independently
of diagnose's own writer. Every field of the stable schema is declared, so a field number
diagnose got wrong shows up as an unknown field or a wrongly typed value."""

from __future__ import annotations

import gzip
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, unknown_fields

F = descriptor_pb2.FieldDescriptorProto
I64, U64, BOOL, STR, MSG = F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL, F.TYPE_STRING, F.TYPE_MESSAGE
REP, OPT = F.LABEL_REPEATED, F.LABEL_OPTIONAL

#: message -> (field name, number, type, repeated, message type)
SCHEMA: dict[str, list[tuple[str, int, int, bool, str]]] = {
    "Profile": [
        ("sample_type", 1, MSG, True, "ValueType"),
        ("sample", 2, MSG, True, "Sample"),
        ("mapping", 3, MSG, True, "Mapping"),
        ("location", 4, MSG, True, "Location"),
        ("function", 5, MSG, True, "Function"),
        ("string_table", 6, STR, True, ""),
        ("drop_frames", 7, I64, False, ""),
        ("keep_frames", 8, I64, False, ""),
        ("time_nanos", 9, I64, False, ""),
        ("duration_nanos", 10, I64, False, ""),
        ("period_type", 11, MSG, False, "ValueType"),
        ("period", 12, I64, False, ""),
        ("comment", 13, I64, True, ""),
        ("default_sample_type", 14, I64, False, ""),
    ],
    "ValueType": [("type", 1, I64, False, ""), ("unit", 2, I64, False, "")],
    "Sample": [
        ("location_id", 1, U64, True, ""),
        ("value", 2, I64, True, ""),
        ("label", 3, MSG, True, "Label"),
    ],
    "Label": [
        ("key", 1, I64, False, ""),
        ("str", 2, I64, False, ""),
        ("num", 3, I64, False, ""),
        ("num_unit", 4, I64, False, ""),
    ],
    "Mapping": [
        ("id", 1, U64, False, ""),
        ("memory_start", 2, U64, False, ""),
        ("memory_limit", 3, U64, False, ""),
        ("file_offset", 4, U64, False, ""),
        ("filename", 5, I64, False, ""),
        ("build_id", 6, I64, False, ""),
        ("has_functions", 7, BOOL, False, ""),
        ("has_filenames", 8, BOOL, False, ""),
        ("has_line_numbers", 9, BOOL, False, ""),
        ("has_inline_frames", 10, BOOL, False, ""),
    ],
    "Location": [
        ("id", 1, U64, False, ""),
        ("mapping_id", 2, U64, False, ""),
        ("address", 3, U64, False, ""),
        ("line", 4, MSG, True, "Line"),
        ("is_folded", 5, BOOL, False, ""),
    ],
    "Line": [("function_id", 1, U64, False, ""), ("line", 2, I64, False, "")],
    "Function": [
        ("id", 1, U64, False, ""),
        ("name", 2, I64, False, ""),
        ("system_name", 3, I64, False, ""),
        ("filename", 4, I64, False, ""),
        ("start_line", 5, I64, False, ""),
    ],
}


def _classes() -> dict[str, Any]:
    fd = descriptor_pb2.FileDescriptorProto(
        name="diagnose_test_profile.proto", package="perftools.profiles", syntax="proto3"
    )
    for name, fields in SCHEMA.items():
        m = fd.message_type.add(name=name)
        for fname, number, ftype, repeated, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=REP if repeated else OPT)
            if type_name:
                f.type_name = f".perftools.profiles.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {
        name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"perftools.profiles.{name}")
        )
        for name in SCHEMA
    }


CLASSES = _classes()


def no_unknown_fields(msg: Any) -> None:
    """No field in ``msg`` or below that profile.proto does not declare."""
    assert len(unknown_fields.UnknownFieldSet(msg)) == 0, type(msg).__name__
    for fd, value in msg.ListFields():
        if fd.type == MSG:
            for sub in value if fd.is_repeated else [value]:
                no_unknown_fields(sub)


def decode(data: bytes) -> Any:
    """A gzipped profile.proto -> its Profile message (checked for unknown fields)."""
    p = CLASSES["Profile"]()
    p.ParseFromString(gzip.decompress(data))
    no_unknown_fields(p)
    return p


class Reader:
    """A decoded profile with its tables resolved: what a pprof viewer would show."""

    def __init__(self, data: bytes) -> None:
        self.p = p = decode(data)
        self.s = list(p.string_table)
        self.functions = {f.id: f for f in p.function}
        self.locations = {loc.id: loc for loc in p.location}
        self.mappings = {m.id: m for m in p.mapping}

    def types(self) -> list[tuple[str, str]]:
        return [(self.s[t.type], self.s[t.unit]) for t in self.p.sample_type]

    def frames(self, sample: Any) -> list[tuple[str, str, int, str]]:
        """(function, file, line, mapping file) of each location, root first."""
        out = []
        for lid in reversed(sample.location_id):
            loc = self.locations[lid]
            fn = self.functions[loc.line[0].function_id]
            mapping = self.mappings[loc.mapping_id] if loc.mapping_id else None
            out.append(
                (
                    self.s[fn.name],
                    self.s[fn.filename],
                    loc.line[0].line,
                    self.s[mapping.filename] if mapping else "",
                )
            )
        return out

    def labels(self, sample: Any) -> dict[str, str]:
        return {self.s[lb.key]: self.s[lb.str] for lb in sample.label}

    def total(self, type_name: str) -> int:
        i = [t for t, _ in self.types()].index(type_name)
        return sum(s.value[i] for s in self.p.sample)
