"""pprof's ``profile.proto``, gzipped, from a :class:`FlatProfile`.

Field numbers are those of github.com/google/pprof, proto/profile.proto (package
``perftools.profiles``); tests/unit/test_export_pprof.py decodes the output with protobuf
against them. Frames carry no addresses: each distinct frame is one location whose line
names its function (file and line where the frame has them), and a native frame's library
is its mapping, marked as symbolised already so that no viewer tries to symbolise it.
"""

from __future__ import annotations

import gzip

from diagnose.export.profile import FlatProfile, FlatSample, ValueType, parse_frame
from diagnose.export.protowire import Message


class _Tables:
    """The string, function and location tables, each entry added on first use."""

    def __init__(self, mappings: dict[str, int]) -> None:
        self.strings: dict[str, int] = {"": 0}  # string_table[0] must be ""
        self.mappings = mappings
        self.function_ids: dict[tuple[str, str], int] = {}
        self.functions: list[Message] = []
        self.location_ids: dict[str, int] = {}
        self.locations: list[Message] = []

    def s(self, text: str) -> int:
        return self.strings.setdefault(text, len(self.strings))

    def function(self, name: str, file: str) -> int:
        fid = self.function_ids.get((name, file))
        if fid is None:
            fid = self.function_ids[(name, file)] = len(self.functions) + 1
            fn = Message().number(1, fid).number(2, self.s(name))  # id, name
            fn.number(3, self.s(name)).number(4, self.s(file))  # system_name, filename
            self.functions.append(fn)
        return fid

    def location(self, text: str) -> int:
        loc_id = self.location_ids.get(text)
        if loc_id is None:
            f = parse_frame(text)
            loc_id = self.location_ids[text] = len(self.locations) + 1
            loc = Message().number(1, loc_id).number(2, self.mappings.get(f.library, 0))
            line = Message().number(1, self.function(f.name, f.file)).number(2, f.line)
            self.locations.append(loc.nested(4, line))  # id, mapping_id, line
        return loc_id

    def value_type(self, vt: ValueType) -> Message:
        return Message().number(1, self.s(vt.type)).number(2, self.s(vt.unit))

    def sample(self, s: FlatSample) -> Message:
        msg = Message().packed(1, [self.location(f) for f in reversed(s.stack)])  # leaf first
        msg.packed(2, s.values)
        for key, value in s.labels:
            msg.nested(3, Message().number(1, self.s(key)).number(2, self.s(value)))
        return msg


def libraries(profile: FlatProfile) -> list[str]:
    """The libraries the frames name, after the main binary (pprof's first mapping, which
    viewers name the profile after, even where no frame of it was seen)."""
    libs = dict.fromkeys([profile.main_binary] if profile.main_binary else [])
    for s in profile.samples:
        libs.update(dict.fromkeys(parse_frame(f).library for f in s.stack))
    return [lib for lib in libs if lib]


def encode_pprof(profile: FlatProfile) -> bytes:
    """The profile as a gzipped ``perftools.profiles.Profile``."""
    mappings = {lib: i for i, lib in enumerate(libraries(profile), 1)}
    t = _Tables(mappings)
    out = Message()
    for vt in profile.sample_types:
        out.nested(1, t.value_type(vt))  # sample_type
    for s in profile.samples:
        out.nested(2, t.sample(s))  # sample
    for lib, mid in mappings.items():  # mapping: id, filename, has_functions
        out.nested(3, Message().number(1, mid).number(5, t.s(lib)).number(7, 1))
    for loc in t.locations:
        out.nested(4, loc)  # location
    for fn in t.functions:
        out.nested(5, fn)  # function
    out.number(9, profile.time_nanos).number(10, profile.duration_nanos)
    if profile.period_type is not None:
        out.nested(11, t.value_type(profile.period_type)).number(12, profile.period)
    out.packed(13, [t.s(c) for c in profile.comments])  # comment
    out.number(14, t.s(profile.default_type))  # default_sample_type
    for text in t.strings:  # last: every table above has added its strings
        out.text(6, text)
    return gzip.compress(bytes(out), mtime=0)
