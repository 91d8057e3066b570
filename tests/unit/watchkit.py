"""Watch stores and reports for the unit tests, made from the recorded bundle's real
report.json (tests/fixtures/bundles/lock_contention)."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from diagnose.app.report import diagnose
from diagnose.watch.store import CAPTURES, Store, row_values
from tests.conftest import FIXTURES

SOURCE = FIXTURES / "bundles" / "lock_contention"
_REPORT: dict[str, Any] = {}


def lock_report() -> dict[str, Any]:
    """The fixture bundle's report (judged once per test process): a lock/mutex verdict."""
    if not _REPORT:
        _REPORT.update(json.loads(json.dumps(diagnose(SOURCE).report, default=str)))
    return copy.deepcopy(_REPORT)


def healthy_report(i: int = 0) -> dict[str, Any]:
    """A copy edited into a compute-bound pod without lock waits (``i`` varies it a little)."""
    r = lock_report()
    r["verdict"].update(primary="compute", title="Compute", kind="cpu", confidence=0.8 + i / 100)
    r["verdict"]["headline"] = "The model's compute takes the cores"
    m = r["metrics"]
    m.update(busy_share_lock=0.02 + i * 0.004, busy_share_running=0.75 + i * 0.01,
             busy_share_runnable=0.2 - i * 0.005, migrations_per_s=270.0 + i)  # fmt: skip
    r["target"]["pid"] = 1000 + i
    return r


def at(report: dict[str, Any], when: float) -> dict[str, Any]:
    """``report`` as if its capture started at Unix time ``when``."""
    r = copy.deepcopy(report)
    r["capture"]["started"] = datetime.fromtimestamp(when, timezone.utc).isoformat()
    return r


def add_capture(
    store: Store, report: dict[str, Any], name: str, kept_whole: bool, filler: int = 0
) -> Any:
    """A capture directory holding ``report`` (and ``filler`` bytes of a bundle table), and
    its row."""
    rel = f"{CAPTURES}/{name}"
    store.dir.subdir_fd((CAPTURES, name), create=True)
    store.dir.write_new(f"{rel}/report.json", json.dumps(report).encode())
    if filler:
        store.dir.write_new(f"{rel}/proc/threads.csv", b"x" * filler)
    return store.add(row_values(report, "svc"), rel, kept_whole)


def write_report(path: Path, report: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report))
    return path
