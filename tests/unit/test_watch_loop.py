"""diagnose watch's loop with the capture replaced by a copy of the recorded bundle: every
turn is judged by the real write_reports, stored, cut to its report when its verdict did
not change, exported; signals, a busy target and the target's exit end or skip turns as
documented. The real captures are tests/e2e/test_watch.py's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from diagnose.app import watch as loop
from diagnose.app.watch import Stored, Watcher, WatchPlan
from diagnose.bundle.manifest import Manifest
from diagnose.bundle.safedir import SafeDir
from diagnose.bundle.writer import BundleWriter
from diagnose.cli.common import make_options
from diagnose.collect import session
from diagnose.collect.session import CaptureResult
from diagnose.collect.target import Target
from diagnose.errors import Busy, TargetError
from diagnose.watch.exporter import WatchCollector
from diagnose.watch.store import Store
from tests.unit.watchkit import SOURCE

TARGET = Target(1, "python", "", (), 0, 0.0, True, "3.11", None)


def _fake_capture(script: list[Any]) -> Any:
    """A capture() that copies the fixture bundle to ``out``; each call takes the next item
    of ``script``: an exception to raise, or the ``ended_by`` to record."""

    def capture(pid: int, out: Path, *_a: Any, **_k: Any) -> CaptureResult:
        step = script.pop(0)
        if isinstance(step, Exception):
            raise step
        shutil.copytree(SOURCE, out)
        out.chmod(0o700)
        manifest = Manifest.from_dict(json.loads((out / "manifest.json").read_text()))
        # started now, as a real capture: the store prunes by the capture's age
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        manifest.capture = replace(manifest.capture, ended_by=step, started=now)
        writer = BundleWriter(SafeDir.open(out))
        writer.write_manifest(manifest)
        return CaptureResult(out, manifest, TARGET, writer)

    return capture


def _watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: list[Any], count: int = 9):
    monkeypatch.setattr(loop, "capture", _fake_capture(script))
    plan = WatchPlan(every_s=0.01, options=make_options(3, None, None, False, True, None, 64),
                     keep_s=7 * 86400, max_store_bytes=1 << 30, count=count)  # fmt: skip
    seen: list[Stored] = []
    collector = WatchCollector("svc", 1)
    with Store.create(tmp_path / "store") as store:
        end = Watcher(plan, store, collector, seen.append).run(1, lambda: True)
        rows = store.captures()
    return end, seen, rows, collector


def test_a_turn_whose_verdict_did_not_change_keeps_its_report_only(tmp_path, monkeypatch):
    end, seen, rows, collector = _watch(tmp_path, monkeypatch, ["duration"] * 2, count=2)
    assert (end.reason, end.captures) == ("count", 2)
    assert [r.verdict for r in rows] == [("lock", "mutex")] * 2
    assert [r.kept_whole for r in rows] == [True, False]
    first, second = (tmp_path / "store" / r.path for r in rows)
    # the first, kept whole, has its page too; the second only its report
    assert {"manifest.json", "report.json", "report.html", "proc"} <= {
        p.name for p in first.iterdir()
    }
    assert [p.name for p in second.iterdir()] == ["report.json"]
    assert [s.row for s in seen] == rows and collector.captures == 2


def test_a_signal_during_a_capture_ends_the_watch_after_storing_it(tmp_path, monkeypatch):
    end, _, rows, _ = _watch(
        tmp_path, monkeypatch, ["duration", "interrupted (SIGTERM)", "duration"]
    )
    assert (end.reason, end.captures, end.detail) == ("interrupted", 2, "interrupted (SIGTERM)")
    assert rows[-1].ended_by == "interrupted (SIGTERM)"


def test_the_target_exiting_ends_the_watch(tmp_path, monkeypatch):
    end, _, _, _ = _watch(tmp_path, monkeypatch, ["duration", TargetError("no process 1")])
    assert (end.reason, end.captures, end.detail) == ("target_exited", 1, "no process 1")
    end, _, _, _ = _watch(tmp_path / "b", monkeypatch, ["target_exited"])
    assert (end.reason, end.captures) == ("target_exited", 1)


def test_another_capture_of_the_target_skips_a_turn(tmp_path, monkeypatch):
    end, seen, rows, _ = _watch(
        tmp_path, monkeypatch, [Busy("another diagnose"), "duration"], count=1
    )
    assert seen[0].row is None and seen[0].note.startswith("skipped: another diagnose")
    assert (end.reason, len(rows)) == ("count", 1)


def test_a_target_gone_between_captures_ends_the_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(loop, "capture", _fake_capture(["duration"]))
    plan = WatchPlan(every_s=3600, options=make_options(3, None, None, False, True, None, 64),
                     keep_s=86400, max_store_bytes=1 << 30)  # fmt: skip
    with Store.create(tmp_path / "store") as store:
        end = Watcher(plan, store).run(1, lambda: False)
    assert (end.reason, end.captures) == ("target_exited", 1)


def test_its_own_capture_lock_held_by_a_process_it_left_behind_is_freed(tmp_path, monkeypatch):
    # GIVEN this process's capture lock on a target, its socket inherited by a child (an
    # earlier capture's process left behind) and closed here: the kernel still holds it
    target = subprocess.Popen(["sleep", "60"])
    lock = session._TargetLock(target.pid)
    lock.acquire()
    assert lock.sock is not None
    leftover = subprocess.Popen(["sleep", "60"], pass_fds=(lock.sock.fileno(),))
    bystander = subprocess.Popen(["sleep", "60"])  # a child of ours without it (run's guard)
    lock.release()

    def locked() -> str:  # the real lock, as capture() takes it
        session._TargetLock(target.pid).acquire()
        return "duration"

    script: list[Any] = []
    monkeypatch.setattr(loop, "capture", _fake_capture(script))
    try:
        with pytest.raises(Busy) as busy:
            locked()
        assert busy.value.holder == os.getpid()
        note = loop._busy_note(busy.value, target.pid)
        # THEN the turn says whose lock it was, and ends the process left behind holding it
        # (not the target, nor another child of ours), so that the next turn captures
        assert note.startswith("this watch's own earlier capture") and str(leftover.pid) in note
        leftover.wait(timeout=5)  # ended (and reaped by the watch) long before its 60 s
        assert target.poll() is None and bystander.poll() is None
        assert locked() == "duration"
        # near miss: another diagnose's lock is named as such and nothing is ended
        assert loop._busy_note(Busy("another diagnose", holder=1), target.pid) == "another diagnose"
    finally:
        for p in (target, leftover, bystander):
            p.kill()
            p.wait()
