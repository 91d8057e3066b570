"""diagnose watch's store: durations, the SQLite index, cutting a capture to its report and
retention by age and size, on captures made from the recorded bundle's report.json."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time

import pytest

from diagnose.errors import BadBundle, Busy, UsageError
from diagnose.watch.duration import format_duration, parse_duration
from diagnose.watch.store import CAPTURES, INDEX, KEY_METRICS, Store, row_values
from tests.unit.watchkit import add_capture, at, healthy_report, lock_report

DAY = 86400.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15", 15), ("15s", 15), ("10m", 600), ("2h", 7200), ("7d", 7 * DAY), ("1.5m", 90),
     (" 3S ", 3)],
)  # fmt: skip
def test_durations(text, seconds):
    assert parse_duration(text, "--every") == seconds


@pytest.mark.parametrize("text", ["", "0", "0s", "-5", "5w", "m", "1e3", "nan", "10 minutes"])
def test_bad_durations_are_usage_errors_naming_the_option(text):
    with pytest.raises(UsageError, match="--keep"):
        parse_duration(text, "--keep")


def test_durations_print_in_their_largest_whole_unit():
    assert [format_duration(s) for s in (600, 90, 7 * DAY, 3600, 2.5)] == [
        "10m", "90s", "7d", "1h", "2.5s"]  # fmt: skip


def test_a_store_is_private_and_its_index_keeps_one_row_per_capture(tmp_path):
    # GIVEN a new store WHEN two captures are added
    with Store.create(tmp_path / "store") as store:
        first = add_capture(store, lock_report(), "1-20260101-000000-1", kept_whole=True)
        second = add_capture(store, healthy_report(), "1-20260101-000000-2", kept_whole=False)
    # THEN the directory is 0700, the index 0600, and each row holds what the report said
    assert stat.S_IMODE(os.stat(tmp_path / "store").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "store" / INDEX).st_mode) == 0o600
    with Store.open(tmp_path / "store") as store:
        rows = store.captures()
        assert [r.id for r in rows] == [first.id, second.id]
        lock = rows[0]
        report = lock_report()
        assert (lock.category, lock.kind, lock.confidence) == ("lock", "mutex", 0.73)
        assert lock.pid == report["target"]["pid"] and lock.kept_whole
        assert lock.metrics["busy_share_lock"] == report["metrics"]["busy_share_lock"]
        assert set(lock.metrics) == set(KEY_METRICS)
        assert lock.path == "captures/1-20260101-000000-1" and lock.bytes > 50_000
        assert store.report(lock)["verdict"]["primary"] == "lock"
        assert rows[1].verdict == ("compute", "cpu") and not rows[1].kept_whole


def test_one_writer_per_store_and_readers_never_write(tmp_path):
    with Store.create(tmp_path / "s") as store:
        add_capture(store, lock_report(), "1-20260101-000000", kept_whole=True)
        with pytest.raises(Busy, match="another diagnose watch"):
            Store.create(tmp_path / "s")
        with Store.open(tmp_path / "s") as reader:
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                reader.db.execute("DELETE FROM captures")
            assert len(reader.captures()) == 1
    with pytest.raises(BadBundle, match="not a diagnose watch store"):
        Store.open(tmp_path)


def test_an_index_of_another_version_is_refused(tmp_path):
    Store.create(tmp_path / "s").close()
    with sqlite3.connect(tmp_path / "s" / INDEX) as db:
        db.execute("PRAGMA user_version = 7")
    with pytest.raises(BadBundle, match="version 7"):
        Store.open(tmp_path / "s")


def test_a_store_someone_else_can_write_is_refused(tmp_path):
    (tmp_path / "open").mkdir(mode=0o777)
    os.chmod(tmp_path / "open", 0o777)
    from diagnose.errors import OutputError

    with pytest.raises(OutputError, match="0700"):
        Store.create(tmp_path / "open")


def test_keeping_the_report_only_deletes_the_rest_and_follows_no_link(tmp_path):
    # GIVEN a capture whose bundle holds tables, and a link planted to a file outside
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    with Store.create(tmp_path / "s") as store:
        row = add_capture(store, lock_report(), "1-20260101-000000", True, filler=100_000)
        cap = tmp_path / "s" / row.path
        (cap / "proc" / "link").symlink_to(outside)
        (cap / "dirlink").symlink_to(tmp_path)
        # WHEN it is cut to its report
        store.keep_report_only(row.path)
        # THEN only report.json is left, and the files the links named are untouched
        assert sorted(p.name for p in cap.iterdir()) == ["report.json"]
        assert outside.read_text() == "keep me" and (tmp_path / "s").is_dir()
        assert store.size_of(row.path) == row.bytes - 100_000


def test_retention_by_age_keeps_the_newest_always(tmp_path):
    now = time.time()
    with Store.create(tmp_path / "s") as store:
        for n, age in enumerate([10 * DAY, 8 * DAY, 1 * DAY, 60.0]):
            add_capture(store, at(healthy_report(n), now - age), f"1-2026010{n}-000000", False)
        # WHEN captures older than 7 days go
        gone = store.prune(now, keep_s=7 * DAY, max_bytes=1 << 40)
        # THEN the two oldest are gone, rows and directories
        assert [r.path for r in gone] == [
            "captures/1-20260100-000000",
            "captures/1-20260101-000000",
        ]
        assert len(store.captures()) == 2
        assert sorted(p.name for p in (tmp_path / "s" / "captures").iterdir()) == [
            "1-20260102-000000", "1-20260103-000000"]  # fmt: skip
        # AND with a retention shorter than the newest capture's age, the newest stays
        store.prune(now + 30 * DAY, keep_s=DAY, max_bytes=1 << 40)
        assert [r.path for r in store.captures()] == ["captures/1-20260103-000000"]


def test_retention_by_size_removes_the_oldest_first(tmp_path):
    now = time.time()
    with Store.create(tmp_path / "s") as store:
        rows = [
            add_capture(store, at(lock_report(), now - 100 + n), f"1-2026010{n}-000000", True,
                        filler=200_000)
            for n in range(4)
        ]  # fmt: skip
        each = rows[0].bytes
        # WHEN the store may hold two captures and its index
        gone = store.prune(now, keep_s=7 * DAY, max_bytes=2 * each + 100_000)
        # THEN the two oldest went and what is left fits
        assert [r.id for r in gone] == [rows[0].id, rows[1].id]
        assert store.total_bytes() <= 2 * each + 100_000
        # AND a budget smaller than one capture still keeps the newest
        store.prune(now, keep_s=7 * DAY, max_bytes=1)
        assert [r.id for r in store.captures()] == [rows[3].id]


def test_an_index_path_that_leaves_the_store_is_refused(tmp_path):
    with Store.create(tmp_path / "s") as store, pytest.raises(ValueError, match="escapes"):
        store.add({}, "../elsewhere", kept_whole=True)


def test_a_long_watch_holds_no_descriptor_per_capture(tmp_path):
    # GIVEN a store WHEN 40 captures are written (by path, as a capture writes them), each
    # sized into the index, cut to its report and read back, as a watch does every cycle
    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    counts = []
    with Store.create(tmp_path / "store") as store:
        for i in range(40):
            rel = f"{CAPTURES}/1-20260101-{i:06d}"
            (tmp_path / "store" / rel / "proc").mkdir(parents=True)
            (tmp_path / "store" / rel / "report.json").write_text(json.dumps(healthy_report()))
            (tmp_path / "store" / rel / "proc" / "threads.csv").write_text("x" * 100)
            row = store.add(row_values(healthy_report(), "svc"), rel, kept_whole=False)
            store.keep_report_only(rel)
            assert store.report(row)["verdict"]["primary"] == "compute"
            counts.append(descriptors())
    # THEN it holds as many descriptors after the 40th as after the first (a 1-hour watch
    # held one per capture: 52 after 52 captures, a week's 1,008 past the usual limit of 1,024)
    assert counts[-1] == counts[0], counts
