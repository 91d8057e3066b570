"""A sweep record (sweep.json) is input someone else may have written: every path in it
stays inside the sweep directory, every number has its type, and compare trusts a record
it finds above a bundle only when no other user could have written it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from diagnose.app.sweep import step_figures
from diagnose.errors import BadBundle
from diagnose.sweep.record import load_record
from tests.conftest import FIXTURES
from tests.unit.test_cli import run_main
from tests.unit.test_sweep_report import POOL, record, setting, step

NOBODY = 65534


def write_sweep(root: Path, slug: str = "base", bundles: bool = False, **edit: object) -> Path:
    """A sweep directory whose record has one setting of POOL's steps (knee at 4 users)."""
    steps = [step(slug, u, q, p) for u, q, p in POOL]
    for s in steps:
        s["bundle"] = f"steps/base/users-{s['users']}/bundle"
    rec = record([setting("base", slug, steps)])
    for key, value in edit.items():
        rec[key] = value
    root.mkdir(parents=True, exist_ok=True)
    (root / "sweep.json").write_text(json.dumps(rec))
    if bundles:
        for s in steps:
            shutil.copytree(FIXTURES / "bundles" / "lock_contention", root / s["bundle"])
    return root


def test_a_sweep_report_writes_the_knee_comparison_inside_the_sweep(tmp_path):
    sweep = write_sweep(tmp_path / "sweep", bundles=True)
    res = run_main("report", str(sweep), "--format", "json")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (sweep / "knee" / "base").iterdir()) == [
        "compare.html",
        "compare.json",
        "compare.md",
    ]


@pytest.mark.parametrize("slug", ["../../victim", "/tmp/victim-abs", "a/b", "..", "", "x\0y"])
def test_a_crafted_slug_is_refused_and_nothing_is_written_outside(tmp_path, slug):
    # GIVEN a copied sweep whose setting's slug points out of the sweep directory
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "compare.md").write_text("root's own file\n")
    sweep = write_sweep(tmp_path / "a" / "b" / "sweep", slug=slug, bundles=True)
    # WHEN root re-renders it
    res = run_main("report", str(sweep))
    # THEN one line, exit 7, and nothing created or replaced anywhere
    assert res.returncode == 7, res.stderr
    assert "slug" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert (victim / "compare.md").read_text() == "root's own file\n"
    assert sorted(p.name for p in victim.iterdir()) == ["compare.md"]
    assert not (sweep / "knee").exists() and not (sweep / "report.md").exists()
    assert not Path("/tmp/victim-abs").exists()


@pytest.mark.parametrize("field", ["bundle", "load_dir", "dir"])
@pytest.mark.parametrize("value", ["../../../etc", "/etc", "steps/../../x"])
def test_a_step_path_out_of_the_sweep_is_refused(tmp_path, field, value):
    rec = record([setting("base", "base", [step("base", 1, 10.0, 100.0)])])
    rec["settings"][0]["steps"][0][field] = value
    (tmp_path / "sweep.json").write_text(json.dumps(rec))
    with pytest.raises(BadBundle, match=field):
        load_record(tmp_path)


@pytest.mark.parametrize(
    "edit, where",
    [
        ({"host": {"logical_cpus": "two"}}, "logical_cpus"),
        ({"sla_p99_ms": "fast"}, "sla_p99_ms"),
        (
            {"settings": [{"name": "x", "slug": "x", "steps": [{"users": "1", "status": "ok"}]}]},
            "users",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line(tmp_path, edit, where):
    write_sweep(tmp_path, **edit)
    res = run_main("report", str(tmp_path))
    assert res.returncode == 7 and where in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_generator_cores_as_a_string_is_refused(tmp_path):
    rec = record([setting("base", "base", [step("base", 1, 10.0, 100.0)])])
    rec["settings"][0]["steps"][0]["generator"]["cpu_cores"] = "lots"
    (tmp_path / "sweep.json").write_text(json.dumps(rec))
    res = run_main("report", str(tmp_path))
    assert res.returncode == 7 and "cpu_cores" in res.stderr, res.stderr


@pytest.mark.parametrize(
    "load, why",
    [
        ({"seconds": 1e-308, "requests": 10}, "seconds"),
        ({"seconds": 5, "requests": 10, "p50_ms": 1e-308}, "p50_ms"),
        ({"seconds": 5, "requests": 10**13}, "requests"),
        ({"seconds": 5, "requests": 10, "failures": 11}, "failures"),
        ({"seconds": 5, "requests": 10, "p99_ms": -1}, "p99_ms"),
    ],
)
def test_figures_out_of_range_are_refused(tmp_path, load, why):
    rec = record([setting("base", "base", [step("base", 1, 10.0, 100.0)])])
    rec["settings"][0]["steps"][0]["load"] = {"tool": "x", **load}
    (tmp_path / "sweep.json").write_text(json.dumps(rec))
    with pytest.raises(BadBundle, match=why):
        load_record(tmp_path)


def test_a_record_nested_thousands_deep_is_one_line(tmp_path):
    (tmp_path / "sweep.json").write_text(
        '{"schema": "diagnose.sweep", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    )
    res = run_main("report", str(tmp_path))
    assert res.returncode == 7 and "nested too deeply" in res.stderr, res.stderr


def test_a_record_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "sweep.json")
    with pytest.raises(BadBundle, match="not a regular file"):
        load_record(tmp_path)


# --- compare: a record found above a bundle ------------------------------------------------


def figures_sweep(tmp_path: Path) -> tuple[Path, Path]:
    steps = [step("base", 1, 40.0, 30.0), step("base", 2, 70.0, 40.0)]
    sweep = tmp_path / "shared"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps(record([setting("base", "base", steps)])))
    os.chmod(sweep / "sweep.json", 0o644)
    bundle = sweep / steps[1]["bundle"]
    bundle.mkdir(parents=True)
    return sweep, bundle


def test_compare_uses_our_own_record_and_says_where_it_is(tmp_path):
    sweep, bundle = figures_sweep(tmp_path)
    f = step_figures(bundle)
    assert f is not None and f["qps"] == 70.0
    assert str(sweep / "sweep.json") in f["source"]


def test_compare_ignores_a_record_another_user_wrote(tmp_path):
    # GIVEN another user's sweep.json above root's bundle (a shared sticky directory)
    sweep, bundle = figures_sweep(tmp_path)
    os.chown(sweep / "sweep.json", NOBODY, NOBODY)
    assert step_figures(bundle) is None


def test_compare_ignores_a_record_others_may_write(tmp_path):
    sweep, bundle = figures_sweep(tmp_path)
    os.chmod(sweep / "sweep.json", 0o666)
    assert step_figures(bundle) is None


def test_compare_ignores_a_record_that_is_a_link(tmp_path):
    # GIVEN a link to a huge sparse file: never followed, never read whole
    sweep, bundle = figures_sweep(tmp_path)
    big = tmp_path / "big"
    with big.open("wb") as fh:
        fh.truncate(512 * 1024 * 1024)
    (sweep / "sweep.json").unlink()
    (sweep / "sweep.json").symlink_to(big)
    assert step_figures(bundle) is None


def test_compare_ignores_a_record_over_the_size_cap(tmp_path):
    sweep, bundle = figures_sweep(tmp_path)
    with (sweep / "sweep.json").open("r+b") as fh:
        fh.truncate(64 * 1024 * 1024)
    assert step_figures(bundle) is None


def test_the_host_url_password_is_redacted_in_the_record(tmp_path):
    # GIVEN diagnose sweep --host http://admin:S3cret@... (issue 40, finding 4)
    from diagnose.app.sweep_runner import Sweep, SweepPlan
    from diagnose.collect.base import CaptureOptions
    from diagnose.sweep.plan import DEFAULT_SETTING, parse_load

    host = "http://admin:S3cretPw42@127.0.0.1:8082"
    plan = SweepPlan(
        out=tmp_path / "sweep",
        load=parse_load(f"{sys.executable} -c pass {{users}} {{duration}} {{host}}", host=host),
        steps=(1,),
        settings=[DEFAULT_SETTING],
        options=CaptureOptions(),
        pid=os.getpid(),
        command=["diagnose", "sweep", str(os.getpid()), "--host", host],
    )
    rec = Sweep(plan)._new_record()
    # THEN neither the load's host nor diagnose's own command line holds the password
    assert rec["load"]["host"] == "http://admin:***@127.0.0.1:8082"
    assert "S3cretPw42" not in json.dumps(rec)
