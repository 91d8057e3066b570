"""A 10-minute capture of a 100-thread service: diagnose streams to disk, so its memory stays
flat while it records; py-spy runs in 60 s chunks, so each py-spy's memory is bounded too.
The memory of diagnose, of every py-spy and the bundle's size are sampled every 2 s and
written to ``long-capture.csv`` next to the bundle (the figures in docs/reliability.md).

Slow (10 minutes plus the report), so it runs only when asked for::

    pytest -m slow tests/e2e/test_reliability_long.py -s

DIAGNOSE_LONG_SECONDS shortens it (e.g. 120) for a trial run.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import time
from datetime import datetime
from pathlib import Path

import psutil
import pytest

from tests.conftest import run_sample
from tests.e2e.safety import cpu_rate, settled_health, start_attach, wait_no_helpers

pytestmark = pytest.mark.slow
SECONDS = float(os.environ.get("DIAGNOSE_LONG_SECONDS", "600"))
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def only_when_asked_for(request):
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a 10-minute test: run it with pytest -m slow")


def rss(p: psutil.Process) -> int:
    with contextlib.suppress(psutil.Error):
        return p.memory_info().rss
    return 0


def bundle_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def test_memory_stays_bounded_over_a_long_capture_of_100_threads(tmp_path):
    out = tmp_path / "bundle"
    samples: list[dict[str, float]] = []
    with run_sample("lock_contention", "--threads", "100", seconds=SECONDS + 600) as s:
        before = cpu_rate(s.pid, 3.0)
        proc = start_attach(s.pid, out, SECONDS)
        diag = psutil.Process(proc.pid)
        spies: dict[int, int] = {}  # py-spy pid -> its largest RSS
        while proc.poll() is None:
            kids = []
            with contextlib.suppress(psutil.Error):
                kids = [k for k in diag.children() if k.name() == "py-spy"]
            for k in kids:
                spies[k.pid] = max(spies.get(k.pid, 0), rss(k))
            samples.append(
                {
                    "wall": time.time(),
                    "diagnose_rss": rss(diag),
                    "py_spy_rss": sum(rss(k) for k in kids),
                    "bundle_bytes": bundle_bytes(out) if out.exists() else 0,
                }
            )
            time.sleep(2.0)
        err = proc.stderr.read() if proc.stderr else ""
        assert not wait_no_helpers(s.pid, 5)
        assert settled_health(s.pid).ok
        after = cpu_rate(s.pid, 3.0)
    assert proc.returncode in (0, 5), err

    manifest = json.loads((out / "manifest.json").read_text())
    capture = manifest["capture"]
    start = datetime.fromisoformat(capture["started"]).timestamp()
    recorded = start + capture["duration_requested"]  # then py-spy's output is converted
    end = datetime.fromisoformat(capture["ended"]).timestamp()  # then the report is made
    for row in samples:
        row["t"] = round(row["wall"] - start, 1)
        wall = row["wall"]
        row["phase"] = (
            "start" if wall < start else "capture" if wall <= recorded
            else "finish" if wall <= end else "report"
        )  # fmt: skip
    with (tmp_path / "long-capture.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, ["t", "phase", "diagnose_rss", "py_spy_rss", "bundle_bytes"])
        w.writeheader()
        w.writerows({k: r[k] for k in w.fieldnames} for r in samples)

    # THEN the capture ran its course, in 60 s py-spy chunks
    assert capture["ended_by"] == "duration"
    assert manifest["collectors"]["pyspy"]["details"]["chunks"] >= math.ceil(SECONDS / 60)
    assert len(spies) >= math.ceil(SECONDS / 60)
    # diagnose's memory while recording does not grow with time: its peak in the last half
    # of the capture is within 32 MB of its peak in the first minute
    rec = [r for r in samples if r["phase"] == "capture"]
    first = max(r["diagnose_rss"] for r in rec if r["t"] <= 60)
    late = max(r["diagnose_rss"] for r in rec if r["t"] >= SECONDS / 2)
    finish_peak = max([r["diagnose_rss"] for r in samples if r["phase"] == "finish"] or [0])
    report_peak = max([r["diagnose_rss"] for r in samples if r["phase"] == "report"] or [0])
    figures = {
        "seconds": SECONDS,
        "diagnose_rss_first_minute_mb": round(first / MB, 1),
        "diagnose_rss_second_half_mb": round(late / MB, 1),
        "diagnose_rss_finish_peak_mb": round(finish_peak / MB, 1),
        "diagnose_rss_report_peak_mb": round(report_peak / MB, 1),
        "finish_s": round(end - recorded, 1),
        "py_spy_rss_max_mb": round(max(spies.values()) / MB, 1),
        "py_spy_processes": len(spies),
        "bundle_mb": round(bundle_bytes(out) / MB, 1),
        "proc_rows": manifest["collectors"]["proc"]["details"]["rows"],
        "target_cpu_before_after": [round(before, 2), round(after, 2)],
    }
    print("\nlong capture:", json.dumps(figures))
    (tmp_path / "long-capture.json").write_text(json.dumps(figures, indent=1))
    assert late <= first + 32 * MB, figures
    # each py-spy is bounded by its chunk: none grows to more than 256 MB
    assert max(spies.values()) < 256 * MB, figures
    # and the service does its work as before
    assert after >= 0.5 * before, figures
