"""The export formats: each one function from a :class:`FlatProfile` to a file's bytes, and
the file name suffix it is written with. A new format is one entry in :data:`ENCODERS`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from diagnose.export.pprof import encode_pprof
from diagnose.export.profile import FlatProfile
from diagnose.formats.speedscope import samples_to_speedscope

#: speedscope's units for pprof's
_SPEEDSCOPE_UNITS = {"nanoseconds": "nanoseconds", "count": "none"}


def encode_speedscope(profile: FlatProfile) -> bytes:
    """One sampled profile per thread, weighted by the profile's default value; labels that
    split the view (the wait class, the thread state) become the stack's first frame."""
    i = [t.type for t in profile.sample_types].index(profile.default_type)
    unit = _SPEEDSCOPE_UNITS.get(profile.sample_types[i].unit, "none")
    names: dict[int, str] = {}
    rows = []
    for s in profile.samples:
        labels = dict(s.labels)
        names.setdefault(s.tid, labels.get("thread_name", ""))
        head = tuple(f"{k}: {labels[k]}" for k in profile.split_labels if k in labels)
        rows.append((s.tid, head + s.stack, float(s.values[i])))
    doc = samples_to_speedscope(rows, names, f"diagnose {profile.view}", unit)
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "replace")


@dataclass(frozen=True)
class Encoder:
    suffix: str
    encode: Callable[[FlatProfile], bytes]


ENCODERS = {
    "pprof": Encoder(".pb.gz", encode_pprof),
    "speedscope": Encoder(".speedscope.json", encode_speedscope),
}
