"""A new user's own pre-fork service (issue 41, item 1): a lock around the model in every
request's handler, served with 2 workers by gunicorn (gthread) and by uvicorn (FastAPI, sync
endpoints), under locust. diagnose attach on the master must put the lock, where the threads
wait on it, and its fix on the first screen: in the terminal's summary and at the top of
report.html (at 1400 and 800 px), not only in the workers' own pages."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.zoo import Change, running, select, start_load
from tests.conftest import require_locust
from tests.e2e.browser import chromium, require_browser
from tests.e2e.cli import run_cli

pytestmark = pytest.mark.e2e
TWO_WORKERS = Change("2 workers", args=("--workers", "2"))


@pytest.fixture(scope="module", params=["gunicorn_gthread_model_lock", "fastapi_cache_lock"])
def captured(request, tmp_path_factory) -> tuple[Path, str]:
    require_locust()
    work = tmp_path_factory.mktemp("svc")
    (sample,) = select([request.param])
    with running(sample, TWO_WORKERS, work / "run") as run:
        load = start_load(run, 60, work / "run", users=16)  # 8 request threads per worker
        try:
            time.sleep(sample.warmup_s)
            out = work / "bundle"
            res = run_cli(
                "attach", str(run.pid), "-d", "10", "--format", "json,html", "-o", str(out)
            )
        finally:
            load.stop()
    assert res.returncode in (0, 5), res.stderr
    return out, " ".join((res.stdout + res.stderr).split())


def lock_entry(out: Path) -> dict[str, Any]:
    service = json.loads((out / "report.json").read_text())["service"]
    assert len(service["workers"]) == 2, service["workers"]
    locks = [f for f in service["findings"] if f["category"] == "lock"]
    assert locks, service["findings"]
    return locks[0]


def test_the_lock_and_its_site_are_in_the_terminal_summary(captured):
    out, said = captured
    f = lock_entry(out)
    assert "app.py" in f["site"], f
    assert "Found in the workers:" in said and f"at {f['site']}" in said, said


@pytest.mark.parametrize("width", [1400, 800])
def test_the_lock_is_at_the_top_of_report_html(captured, width):
    require_browser()
    out, _ = captured
    f = lock_entry(out)
    with chromium(width=width) as driver:
        driver.get((out / "report.html").resolve().as_uri())
        top = driver.execute_script(
            "var t = document.getElementById('service-findings');"
            "var f = document.getElementById('findings');"
            "return t && f ? [t.getBoundingClientRect().top, f.getBoundingClientRect().top,"
            " window.innerHeight, document.querySelector('.service-findings').innerText] : null"
        )
    assert top is not None
    here, findings, screen, text = top
    assert here < findings and here < 2 * screen, top
    assert f["site"] in text and "PID" in text
