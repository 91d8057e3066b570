"""The pprof and speedscope encoders and the views they read, on hand-built records; every
pprof file is decoded with protobuf against profile.proto's own field numbers
(tests/unit/pprof_proto.py), not with diagnose's writer."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from diagnose.analyse.model import Analysis
from diagnose.export.encoders import encode_speedscope
from diagnose.export.pprof import encode_pprof
from diagnose.export.profile import FlatProfile, FlatSample, ValueType, parse_frame
from diagnose.export.protowire import Message, varint
from diagnose.export.views import CaptureFacts, build_profiles, split_stack
from tests.unit.pprof_proto import CLASSES, Reader

PY = "handle (/srv/app.py:32)"
PY2 = "serve (/srv/app.py:10)"
NATIVE = "sgemm_kernel (libopenblas.so)"
EXE = "PyEval_EvalFrame (python3.11)"
ROOT = "thread (7): handler-1"


@pytest.mark.parametrize(
    ("n", "wire"),
    [(0, "00"), (1, "01"), (127, "7f"), (150, "9601"), (300, "ac02"), (2**63 - 1, "ff" * 8 + "7f"),
     (-1, "ff" * 9 + "01")],
)  # fmt: skip
def test_varint_is_protobufs(n, wire):
    assert varint(n).hex() == wire


def test_a_message_written_here_reads_back_with_protobuf():
    # GIVEN a Label written field by field, a zero left out as proto3 does
    raw = bytes(Message().number(1, 5).number(2, 300).number(3, 0).number(4, -2))
    # THEN protobuf reads the same values
    label = CLASSES["Label"]()
    label.ParseFromString(raw)
    assert (label.key, label.str, label.num, label.num_unit) == (5, 300, 0, -2)


def test_frames_say_function_file_line_or_library():
    f = parse_frame(PY)
    assert (f.name, f.file, f.line, f.library) == ("handle", "/srv/app.py", 32, "")
    f = parse_frame(NATIVE)
    assert (f.name, f.file, f.line, f.library) == ("sgemm_kernel", "", 0, "libopenblas.so")
    assert parse_frame("<module> (/srv/app.py)").file == "/srv/app.py"
    assert parse_frame("no parentheses").name == "no parentheses"


def _profile() -> FlatProfile:
    types = (ValueType("samples", "count"), ValueType("cpu", "nanoseconds"))
    labels = (("thread_name", "handler-1"), ("thread_role", "handler-*"), ("stage", "compute"))
    return FlatProfile(
        "cpu",
        types,
        "cpu",
        samples=[
            FlatSample(7, (EXE, PY2, PY, NATIVE), (3, 30_000_000), labels),
            FlatSample(8, (PY2,), (1, 10_000_000), (("thread_name", "main"),)),
        ],
        period_type=types[1],
        period=10_000_000,
        time_nanos=1_700_000_000_000_000_000,
        duration_nanos=3_000_000_000,
        comments=("diagnose: test",),
        main_binary="python3.11",
    )


def test_pprof_holds_types_samples_labels_and_tables():
    # GIVEN a profile of two samples, one through a native library and the interpreter
    r = Reader(encode_pprof(_profile()))
    # THEN its string table starts with "", and its types, period and default are pprof's
    assert r.s[0] == ""
    assert r.types() == [("samples", "count"), ("cpu", "nanoseconds")]
    assert (r.s[r.p.period_type.type], r.s[r.p.period_type.unit]) == ("cpu", "nanoseconds")
    assert r.p.period == 10_000_000
    assert r.s[r.p.default_sample_type] == "cpu"
    assert (r.p.time_nanos, r.p.duration_nanos) == (1_700_000_000_000_000_000, 3_000_000_000)
    assert [r.s[c] for c in r.p.comment] == ["diagnose: test"]
    # AND each sample's values, labels and frames (root first here; leaf first on the wire)
    s = r.p.sample[0]
    assert list(s.value) == [3, 30_000_000]
    assert r.labels(s) == {
        "thread_name": "handler-1",
        "thread_role": "handler-*",
        "stage": "compute",
    }
    assert r.frames(s) == [
        ("PyEval_EvalFrame", "", 0, "python3.11"),
        ("serve", "/srv/app.py", 10, ""),
        ("handle", "/srv/app.py", 32, ""),
        ("sgemm_kernel", "", 0, "libopenblas.so"),
    ]
    assert r.locations[s.location_id[0]].line[0].line == 0  # the leaf: the native frame
    assert r.total("cpu") == 40_000_000
    # AND every id is unique and nonzero, one location per distinct frame
    for table in (r.p.function, r.p.location, r.p.mapping):
        ids = [x.id for x in table]
        assert 0 not in ids and len(set(ids)) == len(ids)
    assert len(r.p.location) == 4
    # AND a mapping per library, the main binary first, already symbolised
    assert [r.s[m.filename] for m in r.p.mapping] == ["python3.11", "libopenblas.so"]
    assert all(m.has_functions for m in r.p.mapping)


def test_pprof_is_gzipped_and_the_same_every_time():
    a, b = encode_pprof(_profile()), encode_pprof(_profile())
    assert a[:2] == b"\x1f\x8b" and a == b


def test_hostile_text_is_valid_utf8_in_the_string_table():
    p = _profile()
    p.samples.append(FlatSample(9, ("bad\udcff (/x.py:1)",), (1, 1), (("thread_name", "\x00;\n"),)))
    r = Reader(encode_pprof(p))
    assert "\x00;\n" in r.s
    assert any(s.startswith("bad") for s in r.s)


def test_speedscope_from_the_same_profile():
    doc = json.loads(encode_speedscope(_profile()))
    assert [p["name"] for p in doc["profiles"]] == ["handler-1 (tid 7)", "main (tid 8)"]
    assert {p["unit"] for p in doc["profiles"]} == {"nanoseconds"}
    assert sum(sum(p["weights"]) for p in doc["profiles"]) == 40_000_000
    names = [f["name"] for f in doc["shared"]["frames"]]
    assert {"handle", "serve", "sgemm_kernel"} <= set(names)
    handle = next(f for f in doc["shared"]["frames"] if f["name"] == "handle")
    assert (handle["file"], handle["line"]) == ("/srv/app.py", 32)


# --- views: an analysis's flames -> flat profiles ----------------------------------------


def _analysis(source: str = "perf+py-spy") -> Analysis:
    per = pd.DataFrame(
        {"tid": [7, 9], "name": ["handler-1", ""], "comm": ["python", "OpenBLAS"],
         "role": ["handler-*", "OpenBLAS (native)"]}
    )  # fmt: skip
    a = Analysis(metrics={"oncpu_source": source}, unmeasured={}, per_thread=per, thread_time=None)
    a.flames = {
        "cpu": [((ROOT, PY2, PY, NATIVE), 30.0), (("thread (9): ", NATIVE), 5.0)],
        "waits": [(("lock wait", ROOT, PY2, PY), 1.5), (("gil wait", ROOT, PY2), 0.25)],
        "offcpu": [((ROOT, "off-CPU (S)", PY2, "futex_wait ([kernel.kallsyms])"), 2.0)],
        "wall": [((ROOT, PY2, PY), 2.5)],
    }
    a.cpu_stages = {(7, (PY2, PY, NATIVE)): "compute", (9, (NATIVE,)): "spin"}
    return a


FACTS = CaptureFacts(time_nanos=5, duration_nanos=3 * 10**9, pyspy_hz=100, perf_hz=99, pid=42)


def test_thread_frames_and_wait_frames_become_labels():
    assert split_stack(("lock wait", ROOT, PY)) == (7, "handler-1", [("wait", "lock")], (PY,))
    assert split_stack((ROOT, "off-CPU (D)", PY)) == (
        7,
        "handler-1",
        [("thread_state", "D")],
        (PY,),
    )
    assert split_stack((PY,)) == (-1, "", [], (PY,))


def test_each_view_has_its_units_and_labels():
    profiles = build_profiles(_analysis(), FACTS)
    assert list(profiles) == ["cpu", "offcpu", "waits", "wall"]
    cpu = profiles["cpu"]
    # perf's samples: a count, and CPU time at perf's period
    assert [(t.type, t.unit) for t in cpu.sample_types] == [
        ("samples", "count"),
        ("cpu", "nanoseconds"),
    ]
    assert cpu.period == round(1e9 / 99)
    assert cpu.samples[0].values == (30, 30 * cpu.period)
    assert dict(cpu.samples[0].labels) == {
        "thread_id": "7", "thread_name": "handler-1", "thread_role": "handler-*", "stage": "compute"
    }  # fmt: skip
    # a native thread without a Python name is named as the kernel names it
    assert dict(cpu.samples[1].labels)["thread_name"] == "OpenBLAS"
    assert dict(cpu.samples[1].labels)["stage"] == "spin"
    waits = profiles["waits"]
    assert waits.sample_types == (ValueType("wait", "nanoseconds"),)
    assert [dict(s.labels)["wait"] for s in waits.samples] == ["lock", "gil"]
    assert waits.total("wait") == 1_750_000_000
    assert "stage" not in dict(waits.samples[0].labels)  # stages are on-CPU categories
    off = profiles["offcpu"]
    assert dict(off.samples[0].labels)["thread_state"] == "S"
    assert off.samples[0].stack == (PY2, "futex_wait ([kernel.kallsyms])")
    assert profiles["wall"].period == 10_000_000
    assert profiles["wall"].total("wall") == 2_500_000_000


def test_pyspy_cpu_time_is_in_nanoseconds():
    cpu = build_profiles(_analysis("py-spy"), FACTS)["cpu"]
    assert cpu.sample_types == (ValueType("cpu", "nanoseconds"),)
    assert cpu.total("cpu") == 35 * 10**9


def test_only_the_views_the_analysis_built():
    a = _analysis()
    del a.flames["offcpu"], a.flames["cpu"]
    assert list(build_profiles(a, FACTS)) == ["waits", "wall"]


def test_speedscope_shows_the_wait_class_as_a_frame():
    doc = json.loads(encode_speedscope(build_profiles(_analysis(), FACTS)["waits"]))
    frames = [f["name"] for f in doc["shared"]["frames"]]
    first = {frames[p["samples"][i][0]] for p in doc["profiles"] for i in range(len(p["samples"]))}
    assert first == {"wait: lock", "wait: gil"}
