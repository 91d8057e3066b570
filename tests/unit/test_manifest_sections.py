"""The manifest's sections are typed, frozen records that read any bundle's manifest."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from diagnose.bundle.manifest import Manifest
from diagnose.bundle.reader import Bundle
from diagnose.bundle.sections import CaptureInfo, HostInfo, LeftOut, TargetInfo
from diagnose.errors import BadBundle

FIXTURE = Path(__file__).parent.parent / "fixtures" / "bundles" / "lock_contention"


def test_the_fixture_bundle_reads_as_typed_sections_and_writes_back_the_same_json() -> None:
    raw = json.loads((FIXTURE / "manifest.json").read_text())
    m = Bundle.open(FIXTURE).manifest
    assert isinstance(m.target, TargetInfo) and m.target.pid == raw["target"]["pid"]
    assert m.target.is_python is True and isinstance(m.target.cmdline, tuple)
    assert isinstance(m.capture.duration_actual, float) and m.capture.ended_by == "duration"
    # nothing read is lost or changed on the way back out
    back = m.to_dict()
    for key in ("target", "host", "capture"):
        assert back[key] == raw[key], key


def test_a_section_is_frozen_and_changes_by_replacement() -> None:
    cap = CaptureInfo(started="2026-12-01T10:00:00", duration_requested=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cap.ended_by = "duration"  # type: ignore[misc]
    done = dataclasses.replace(cap, ended_by="interrupted (SIGINT)", duration_actual=3.2)
    assert done.interrupted and not cap.interrupted
    assert cap.ended_by is None  # the old record is unchanged


def test_an_old_manifest_lacks_newer_fields_and_gets_their_defaults() -> None:
    # a bundle from before the machine, the window start and the selection were recorded
    m = Manifest.from_dict(
        {
            "schema": "diagnose.bundle",
            "schema_version": 1,
            "target": {"pid": 7, "comm": "python"},
            "host": {"hostname": "h"},
            "capture": {"started": "2026-01-01T00:00:00", "duration_requested": 5},
        }
    )
    assert m.host.machine == "" and m.host.logical_cpus is None
    assert m.capture.window_start_s == 0.0 and m.capture.ended is None
    assert m.target.is_python is False and m.target.left_out == ()
    # and writing it back does not invent the absent optional fields
    assert "machine" not in m.host.to_dict() and "ended" not in m.capture.to_dict()


def test_fields_a_newer_version_adds_are_kept_and_written_back() -> None:
    cap = CaptureInfo.from_dict({"started": "s", "generated": {"time_factor": 3}})
    assert cap.extra == {"generated": {"time_factor": 3}}
    assert cap.to_dict()["generated"] == {"time_factor": 3}


def test_left_out_processes_are_records_both_ways() -> None:
    target = TargetInfo(pid=10, selection="prefork", left_out=(LeftOut(11, "python", "helper"),))
    d = target.to_dict()
    assert d["left_out"] == [{"pid": 11, "comm": "python", "why": "helper"}]
    assert d["selection"] == "prefork"
    assert TargetInfo.from_dict(json.loads(json.dumps(d))) == target
    # a target chosen without a choice writes neither
    assert "left_out" not in TargetInfo(pid=10).to_dict()


def test_a_section_field_of_the_wrong_type_is_a_bad_bundle_in_one_line() -> None:
    doc = {
        "schema": "diagnose.bundle",
        "schema_version": 1,
        "target": {"pid": 7},
        "host": {"hostname": "h", "machine": 3},
        "capture": {},
    }
    with pytest.raises(BadBundle, match=r"host\.machine"):
        Manifest.from_dict(doc)


def test_the_host_section_keeps_the_machine_the_analysis_reads() -> None:
    assert HostInfo.from_dict({"machine": "aarch64"}).to_dict()["machine"] == "aarch64"
