"""A bundle of several workers read back (diagnose/app/report.py, diagnose/app/service.py): each
worker's bundle judged where it can be, and a crafted bundle (from a ticket) can make
diagnose neither follow a link out of the bundle nor judge without bound."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from diagnose.app.report import diagnose, write_reports
from diagnose.app.service import MAX_OTHER_WORKERS
from tests.conftest import FIXTURES

SOURCE = FIXTURES / "bundles" / "lock_contention"


def service_bundle(tmp_path: Path, entries: list[dict]) -> Path:
    """The fixture bundle as the busiest worker, with ``entries`` in workers.json and the
    fixture again as worker 111's bundle."""
    b = tmp_path / "b"
    shutil.copytree(SOURCE, b)
    for name in ("report.json", "report.md", "report.html"):
        (b / name).unlink(missing_ok=True)
    (b / "workers").mkdir()
    shutil.copytree(SOURCE, b / "workers" / "111")
    (b / "workers.json").write_text(json.dumps({"workers": entries}))
    return b


def entry(pid: int, status: str = "ok", reason: str = "") -> dict:
    return {"pid": pid, "dir": f"workers/{pid}", "status": status, "reason": reason}


def test_each_worker_is_judged_where_it_can_be_and_named_where_not(tmp_path):
    # GIVEN a worker with its bundle, one whose bundle is a link out of the bundle, one
    # whose capture failed, and one listed without a bundle
    b = service_bundle(tmp_path, [entry(111), entry(222), entry(333, "failed", "exit code 4"), entry(444)])  # fmt: skip
    os.symlink(SOURCE, b / "workers" / "222")
    # WHEN the bundle is diagnosed
    d = diagnose(b)
    rows = {r["pid"]: r for r in d.report["service"]["workers"]}
    # THEN the worker with a bundle is judged, the others are named with why
    assert rows[111]["primary"] == d.report["verdict"]["primary"] == "lock"
    assert rows[222]["primary"] is None and "cannot be read" in rows[222]["reason"]
    assert rows[333]["primary"] is None and rows[333]["reason"] == "exit code 4"
    assert rows[444]["primary"] is None and "cannot be read" in rows[444]["reason"]
    assert d.report["service"]["verdict"]["workers_judged"] == 2
    assert "not judged: PID 222" in d.report["service"]["verdict"]["summary"]


def test_a_crafted_list_of_workers_is_judged_within_bounds(tmp_path):
    many = [entry(1000 + i, "failed", "x") for i in range(MAX_OTHER_WORKERS + 40)]
    rows = diagnose(service_bundle(tmp_path, many)).report["service"]["workers"]
    assert len(rows) == 1 + MAX_OTHER_WORKERS
    # near miss: a list that is not what diagnose writes is no list of workers
    b = tmp_path / "bad"
    shutil.copytree(service_bundle(tmp_path / "x", []), b)
    (b / "workers.json").write_text(json.dumps({"workers": [{"pid": "../../etc"}]}))
    assert diagnose(b).report["service"] == {}


@pytest.mark.parametrize("into_bundle", [True, False])
def test_each_workers_reports_go_into_its_bundle_only_when_the_reports_go_into_the_bundle(
    tmp_path, into_bundle
):
    b = service_bundle(tmp_path, [entry(111)])
    out = None if into_bundle else tmp_path / "elsewhere"
    write_reports(b, ["json", "md"], out)
    written = {p.name for p in (b / "workers" / "111").glob("report.*")}
    assert written == ({"report.json", "report.md"} if into_bundle else set())
