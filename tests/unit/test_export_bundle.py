"""``diagnose export`` on the recorded bundle: every flame view the analysis builds, as pprof
(decoded with protobuf against profile.proto) and speedscope, and the command line's errors
and outputs. No process is captured here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import diagnose.app.export as output
from diagnose.analyse import analyse
from diagnose.app.export import export_bundle
from diagnose.bundle.reader import Bundle
from diagnose.export.encoders import ENCODERS, Encoder
from tests.conftest import FIXTURES, ROOT
from tests.unit.pprof_proto import Reader
from tests.unit.test_cli import run_main

VIEWS = ["cpu", "offcpu", "waits", "wall"]
TYPE = {"cpu": "cpu", "offcpu": "off_cpu", "waits": "wait", "wall": "wall"}


def _copy(tmp: Path) -> Path:
    out = tmp / "bundle"
    shutil.copytree(FIXTURES / "bundles" / "lock_contention", out)
    out.chmod(0o700)
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """(bundle, the export directory, the analysis's flame views)."""
    tmp = tmp_path_factory.mktemp("export")
    bundle = _copy(tmp)
    paths = export_bundle(bundle, "pprof", tmp / "out")
    assert list(paths) == VIEWS
    with Bundle.open(bundle) as b:
        flames = analyse(b).flames
    return bundle, tmp / "out", flames


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_decodes_and_its_total_is_the_views(exported, view):
    _bundle, out, flames = exported
    r = Reader((out / f"{view}.pb.gz").read_bytes())
    assert r.s[0] == ""
    assert r.s[r.p.default_sample_type] == TYPE[view]
    assert all(len(s.value) == len(r.p.sample_type) for s in r.p.sample)
    total = sum(w for _, w in flames[view])
    if view == "cpu":  # perf's samples, and CPU time at its 100 Hz
        assert r.types() == [("samples", "count"), ("cpu", "nanoseconds")]
        assert r.total("samples") == round(total)
        assert r.total("cpu") == round(total) * 10_000_000
        assert r.p.period == 10_000_000
    else:  # seconds, in nanoseconds: rounded per sample
        assert r.types() == [(TYPE[view], "nanoseconds")]
        assert abs(r.total(TYPE[view]) - total * 1e9) <= len(r.p.sample)
    # every id a sample or location names is there
    for s in r.p.sample:
        for lid in s.location_id:
            loc = r.locations[lid]
            assert loc.line[0].function_id in r.functions
            assert loc.mapping_id == 0 or loc.mapping_id in r.mappings


def test_the_targets_functions_threads_roles_and_stages_are_there(exported):
    _bundle, out, _flames = exported
    r = Reader((out / "cpu.pb.gz").read_bytes())
    frames = [f for s in r.p.sample for f in r.frames(s)]
    assert ("handle", "/work/main/samples/lock_contention.py", 32, "") in frames
    assert any(
        f[0] == "sgemm_kernel_SKYLAKEX" and f[3].startswith("libscipy_openblas") for f in frames
    )
    labels = [r.labels(s) for s in r.p.sample]
    assert all(lb["thread_id"].isdigit() for lb in labels)
    assert {lb["thread_name"] for lb in labels} >= {"handler-1", "handler-6"}
    assert "handler-*" in {lb.get("thread_role") for lb in labels}
    assert {"compute", "model"} <= {lb.get("stage") for lb in labels}
    # no thread or wait frame left in the stacks: those are labels
    waits = Reader((out / "waits.pb.gz").read_bytes())
    names = {f[0] for s in waits.p.sample for f in waits.frames(s)}
    assert not any(n.startswith("thread (") or n.endswith(" wait") for n in names)
    assert "lock" in {waits.labels(s).get("wait") for s in waits.p.sample}


def test_speedscope_comes_from_the_same_profiles(exported, tmp_path):
    bundle, out, _flames = exported
    paths = export_bundle(bundle, "speedscope", tmp_path / "ss")
    assert [p.name for p in paths.values()] == [f"{v}.speedscope.json" for v in VIEWS]
    doc = json.loads(paths["cpu"].read_text())
    weights = sum(sum(p["weights"]) for p in doc["profiles"])
    assert weights == Reader((out / "cpu.pb.gz").read_bytes()).total("cpu")
    assert "handle" in {f["name"] for f in doc["shared"]["frames"]}


def test_cli_writes_every_view_into_the_bundle_by_default(tmp_path):
    bundle = _copy(tmp_path)
    res = run_main("export", str(bundle))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"{v}: {bundle / (v + '.pb.gz')}" for v in VIEWS]
    assert oct((bundle / "cpu.pb.gz").stat().st_mode & 0o777) == "0o600"


def test_cli_one_view_to_a_file(tmp_path):
    bundle = _copy(tmp_path)
    res = run_main("export", str(bundle), "--view", "waits", "-o", str(tmp_path / "w.prof"))
    assert res.returncode == 0, res.stderr
    assert Reader((tmp_path / "w.prof").read_bytes()).types() == [("wait", "nanoseconds")]


def test_cli_one_view_to_stdout_and_nothing_else(tmp_path):
    bundle = _copy(tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "diagnose", "export", str(bundle), "--view", "cpu", "-o", "-"],
        capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert Reader(res.stdout).types()[0] == ("samples", "count")
    assert not (bundle / "cpu.pb.gz").exists()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["-o", "-"], 2, "-o - takes one view, and this bundle has 4: choose one with --view"),
        (["--view", "nope"], 2, "Invalid value for '--view'"),
        (["--format", "svg"], 2, "Invalid value for '--format'"),
    ],
)
def test_cli_bad_arguments(tmp_path, args, code, message):
    bundle = _copy(tmp_path)
    res = run_main("export", str(bundle), *args)
    assert res.returncode == code
    assert message in res.stderr
    assert res.stdout == ""
    assert not list(bundle.glob("*.pb.gz"))


def test_cli_a_bundle_that_is_not_there(tmp_path):
    res = run_main("export", str(tmp_path / "missing"))
    assert res.returncode == 7
    assert res.stderr.strip() == f"diagnose: error: bundle {tmp_path / 'missing'} does not exist"


def test_cli_a_view_the_bundle_lacks(tmp_path, monkeypatch):
    bundle = _copy(tmp_path)
    real = output.build_profiles
    monkeypatch.setattr(output, "build_profiles", lambda a, f: {"wall": real(a, f)["wall"]})
    res = run_main("export", str(bundle), "--view", "cpu")
    assert res.returncode == 2
    assert f"{bundle} has no cpu view; it has wall" in res.stderr


def test_cli_a_bundle_without_stacks(tmp_path, monkeypatch):
    bundle = _copy(tmp_path)
    monkeypatch.setattr(output, "build_profiles", lambda a, f: {})
    res = run_main("export", str(bundle))
    assert res.returncode == 7
    assert "holds no stacks to export" in res.stderr


def test_cli_an_output_that_cannot_be_written(tmp_path):
    bundle = _copy(tmp_path)
    (tmp_path / "file").write_text("x")
    res = run_main("export", str(bundle), "-o", str(tmp_path / "file" / "dir"))
    assert res.returncode == 6
    assert len(res.stderr.strip().splitlines()) == 1
    res = run_main("export", str(bundle), "-o", str(tmp_path / "file"))
    assert res.returncode == 2
    assert "is a file; with several views give a directory" in res.stderr
    assert (tmp_path / "file").read_text() == "x"


def test_nothing_is_written_when_a_view_fails_to_encode(tmp_path, monkeypatch):
    # GIVEN an encoder that fails on the third view
    bundle = _copy(tmp_path)
    calls = []

    def encode(profile):
        calls.append(profile.view)
        if len(calls) == 3:
            raise ValueError("boom")
        return b"x"

    monkeypatch.setitem(ENCODERS, "pprof", Encoder(".pb.gz", encode))
    with pytest.raises(ValueError):
        export_bundle(bundle, "pprof", tmp_path / "out")
    # THEN no file at all: the views are encoded before any is written
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@pytest.mark.skipif(shutil.which("go") is None, reason="go (golang-go) is not installed")
def test_go_tool_pprof_reads_it(exported):
    _bundle, out, _flames = exported
    res = subprocess.run(
        ["go", "tool", "pprof", "-raw", str(out / "cpu.pb.gz")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "PeriodType: cpu nanoseconds" in res.stdout
    assert "samples/count cpu/nanoseconds[dflt]" in res.stdout
    assert "thread_role:[handler-*]" in res.stdout
    assert "handle /work/main/samples/lock_contention.py:32" in res.stdout
    assert "Mappings\n1: 0x0/0x0/0x0 python3.11" in res.stdout
