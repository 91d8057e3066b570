"""diagnose watch's latency drift: the baseline and the drift decision on hand-built readings,
Prometheus's /api/v1/query answers parsed (a local HTTP server answers as Prometheus does),
the URL checked and its credentials redacted, the index's version-1 stores migrated, and the
loop (the capture replaced by the recorded bundle, as in test_watch_loop.py) keeping a
drifted capture whole with its comparison. The real Prometheus: tests/e2e/test_watch_drift.py."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from diagnose.app import watch as loop
from diagnose.app.watch import Stored, Watcher, WatchPlan
from diagnose.cli.common import make_options
from diagnose.errors import UsageError
from diagnose.render.watch import render_history_text, stored_line
from diagnose.watch.drift import baseline, judge, latency_words, parse_drift
from diagnose.watch.exporter import report_series
from diagnose.watch.history import history
from diagnose.watch.latency import LatencyQuery, NoReading, QueryRejected, parse_value
from diagnose.watch.store import INDEX, INDEX_VERSION, Store
from tests.unit.test_watch_loop import _fake_capture
from tests.unit.watchkit import add_capture, lock_report

# --- the baseline and the decision ---------------------------------------------------------


def test_fewer_than_three_readings_give_no_baseline_and_no_drift():
    assert baseline([]) is None and baseline([5.0, 6.0]) is None
    d = judge(500.0, [5.0, 6.0])
    assert d.baseline_ms is None and d.rise is None and not d.drifted
    assert latency_words(d.p99_ms, d.baseline_ms, d.drifted, None) == (
        "P99 500 ms, no baseline (fewer than 3 readings in a day)"
    )


def test_the_baseline_is_the_median_so_one_slow_reading_does_not_move_it():
    assert baseline([5.0, 400.0, 6.0]) == 6.0
    assert baseline([5.0, 7.0, 6.0, 8.0]) == 6.5


@pytest.mark.parametrize(("base", "p99"), [(100.0, 120.0), (5.0, 6.0), (0.7, 0.84), (12.5, 15.0)])
def test_a_rise_of_exactly_the_limit_is_no_drift(base, p99):
    d = judge(p99, [base] * 3, 0.2)
    assert d.rise == pytest.approx(0.2) and not d.drifted


@pytest.mark.parametrize(("base", "p99"), [(100.0, 120.01), (5.0, 80.0), (0.7, 0.85)])
def test_a_rise_above_the_limit_is_a_drift(base, p99):
    assert judge(p99, [base, base, base], 0.2).drifted


def test_a_fall_or_a_higher_limit_is_no_drift():
    assert not judge(2.0, [5.0] * 3).drifted
    assert not judge(140.0, [100.0] * 5, 0.5).drifted and judge(151.0, [100.0] * 5, 0.5).drifted


def test_drift_words_say_both_figures_the_rise_and_the_capture_compared_with():
    assert latency_words(80.0, 5.0, True, 3) == (
        "drift: P99 80.0 ms vs baseline 5.00 ms (+1500%), compared with capture 3"
    )
    assert latency_words(5.2, 5.0, False, None) == "P99 5.20 ms vs baseline 5.00 ms (+4%)"
    assert latency_words(None, 5.0, False, None) == ""


@pytest.mark.parametrize(("text", "fraction"), [("20%", 0.2), ("20", 0.2), ("150%", 1.5)])
def test_drift_option(text, fraction):
    assert parse_drift(text) == pytest.approx(fraction)


@pytest.mark.parametrize("text", ["0", "-5%", "x", "", "nan", "2000"])
def test_bad_drift_option_is_a_usage_error(text):
    with pytest.raises(UsageError, match="--drift"):
        parse_drift(text)


# --- Prometheus's answers ------------------------------------------------------------------


def _ok(kind: str, result: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": kind, "result": result}}


def test_a_vector_of_one_series_and_a_scalar_give_their_value():
    one = _ok("vector", [{"metric": {}, "value": [1714000000.1, "0.0812"]}])
    assert parse_value(one) == pytest.approx(0.0812)
    assert parse_value(_ok("scalar", [1714000000.1, "0.005"])) == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        (_ok("vector", []), "no series"),
        (_ok("vector", [{"metric": {}, "value": [1, "NaN"]}]), "NaN"),
        (_ok("scalar", [1, "+Inf"]), "not a latency"),
        (_ok("vector", [{"metric": {"a": str(i)}, "value": [1, "1"]} for i in (1, 2)]), "2 series"),
        ({"status": "error", "errorType": "execution", "error": "query timed out"}, "timed out"),
        ({"status": "success", "data": {"resultType": "vector", "result": [{}]}}, "malformed"),
        ([1, 2], "not a Prometheus API response"),
    ],
)
def test_answers_without_one_number_are_no_reading_saying_why(doc, says):
    with pytest.raises(NoReading, match=says) as info:
        parse_value(doc)
    assert not isinstance(info.value, QueryRejected)


@pytest.mark.parametrize(
    "doc",
    [
        {"status": "error", "errorType": "bad_data", "error": 'parse error: unexpected ")"'},
        _ok("matrix", [{"metric": {}, "values": [[1, "1"]]}]),
    ],
)
def test_a_query_that_can_never_give_one_number_is_rejected(doc):
    with pytest.raises(QueryRejected):
        parse_value(doc)


# --- the URL -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["127.0.0.1:9090", "ftp://h:21", "http://", "http://h:99999", "file:///etc/passwd",
            "http://h:9090/#x", "not a url"],
)  # fmt: skip
def test_a_malformed_url_is_a_usage_error(url):
    with pytest.raises(UsageError, match="--prometheus"):
        LatencyQuery.from_options(url, "up")


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown():
    q = LatencyQuery.from_options("http://bob:hunter2@prom.example:9090/prom/?token=s3cr3t", "up")
    req = q.request()
    assert req.full_url.startswith("http://prom.example:9090/prom/api/v1/query?query=up&token=")
    assert req.get_header("Authorization") == "Basic Ym9iOmh1bnRlcjI="  # bob:hunter2
    for text in (q.shown, q.source):
        assert "hunter2" not in text and "s3cr3t" not in text and "prom.example" in text
    with pytest.raises(UsageError) as info:
        LatencyQuery.from_options("ftp://bob:hunter2@h", "up")
    assert "hunter2" not in str(info.value)


# --- a local server answering as Prometheus does --------------------------------------------


@contextlib.contextmanager
def _prometheus(status: int, body: dict[str, Any] | str) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_a: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://alice:pw123@127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_reading_is_in_milliseconds():
    with _prometheus(200, _ok("vector", [{"metric": {}, "value": [1, "0.0805"]}])) as url:
        assert LatencyQuery.from_options(url, "q").read().p99_ms == pytest.approx(80.5)


def test_a_query_prometheus_rejects_is_a_usage_error_at_the_start():
    bad = {"status": "error", "errorType": "bad_data", "error": "1:5: parse error"}
    with _prometheus(400, bad) as url, pytest.raises(UsageError, match="parse error"):
        LatencyQuery.from_options(url, "rate(").check()


def test_prometheus_unreachable_or_broken_is_a_note_never_an_error():
    with _prometheus(503, "Service Unavailable") as url:
        reading = LatencyQuery.from_options(url, "q").check()
    assert reading.p99_ms is None and "HTTP 503" in reading.note and "pw123" not in reading.note
    # the server is gone now: the port is closed
    reading = LatencyQuery.from_options(url, "q", timeout_s=2).read()
    assert reading.p99_ms is None and "unreachable" in reading.note
    assert "pw123" not in reading.note and "alice:***@" in reading.note


# --- the index -----------------------------------------------------------------------------

_V1 = """CREATE TABLE captures (id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT NOT NULL,
started_unix REAL NOT NULL, pid INTEGER NOT NULL, service TEXT NOT NULL, category TEXT NOT NULL,
kind TEXT, confidence REAL, headline TEXT NOT NULL, metrics TEXT NOT NULL, duration_s REAL,
ended_by TEXT NOT NULL, path TEXT NOT NULL, kept_whole INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT INTO captures VALUES (1, '2026-01-01T00:00:00+00:00', 1767225600, 7, 'svc', 'lock',
'mutex', 0.7, 'h', '{}', 3.0, 'duration', 'captures/7-20260101-000000', 1, 100);
PRAGMA user_version = 1;"""


def test_a_version_1_index_is_read_as_it_is_and_migrated_by_a_watch(tmp_path):
    # GIVEN a store written by the diagnose before latency drift
    Store.create(tmp_path / "s").close()
    (tmp_path / "s" / INDEX).unlink()
    with contextlib.closing(sqlite3.connect(tmp_path / "s" / INDEX)) as db:
        db.executescript(_V1)
    # WHEN history reads it THEN its rows have no reading
    with Store.open(tmp_path / "s") as store:
        (row,) = store.captures()
        assert (row.id, row.p99_ms, row.drift) == (1, None, False)
        assert store.readings(0) == [] and store.last_steady() is None
    # WHEN a watch opens it THEN the index gains the columns, its rows kept
    with Store.create(tmp_path / "s") as store:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == INDEX_VERSION == 2
        assert [r.id for r in store.captures()] == [1]
        new = add_capture(store, lock_report(), "7-20260101-000100", False)
        assert new.p99_ms is None and not new.drift


# --- the loop ------------------------------------------------------------------------------


class _Scripted(LatencyQuery):
    """Prometheus's answers, one per capture: seconds, or a NoReading to raise."""

    script: list[Any]

    def ask(self) -> float:
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return float(step)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[Any]):
    monkeypatch.setattr(loop, "capture", _fake_capture(["duration"] * len(answers)))
    latency = _Scripted("http://u:secret@127.0.0.1:9/", "histogram_quantile(0.99, x)")
    object.__setattr__(latency, "script", list(answers))
    plan = WatchPlan(every_s=0.01, options=make_options(3, None, None, False, True, None, 64),
                     keep_s=7 * 86400, max_store_bytes=1 << 30, count=len(answers),
                     latency=latency)  # fmt: skip
    seen: list[Stored] = []
    with Store.create(tmp_path / "store") as store:
        Watcher(plan, store, None, seen.append).run(1, lambda: True)
        rows = store.captures()
        model = history(store)
    return seen, rows, model


def test_a_drifted_capture_is_kept_whole_with_a_comparison_of_both_p99s(tmp_path, monkeypatch):
    # GIVEN three captures at 5 ms, one Prometheus could not answer, then one at 80 ms
    answers = [0.005, 0.005, NoReading("Prometheus at http://u:***@x unreachable"), 0.005, 0.080]
    seen, rows, model = _run(tmp_path, monkeypatch, answers)
    # THEN the capture without a reading went on, with one warning
    assert [r.p99_ms for r in rows] == [5.0, 5.0, None, 5.0, 80.0]
    assert [bool(s.warning) for s in seen] == [False, False, True, False, False]
    assert seen[2].warning.startswith("P99 not read: Prometheus at")
    # AND the baseline needed three readings
    assert [r.p99_baseline_ms for r in rows] == [None, None, None, None, 5.0]
    # AND the last one drifted: kept whole although its verdict did not change, compared
    # with the last capture before the drift
    drifted = rows[-1]
    assert drifted.drift and drifted.kept_whole and not seen[-1].changed
    assert drifted.drift_from == rows[3].id
    assert drifted.comparison == f"{drifted.path}/compare.json"
    assert [r.kept_whole for r in rows] == [True, False, False, False, True]
    here = tmp_path / "store" / drifted.path
    assert {"manifest.json", "report.json", "report.html", "compare.json", "compare.html"} <= {
        p.name for p in here.iterdir()
    }
    c = json.loads((here / "compare.json").read_text())
    assert (c["service"]["before"]["p99_ms"], c["service"]["after"]["p99_ms"]) == (5.0, 80.0)
    assert c["service"]["outcome"] == "regressed"
    assert "secret" not in c["service"]["before"]["source"]
    # AND the terminal line and history say it, with the link
    words = "drift: P99 80.0 ms vs baseline 5.00 ms (+1500%), compared with capture 4"
    line = stored_line(drifted.to_dict(), latency=model["captures"][-1]["latency"],
                       comparison="STORE/compare.html", changed=False)  # fmt: skip
    assert "kept whole (latency drift)" in line and f"{words}: STORE/compare.html" in line
    assert model["captures"][-1]["comparison_link"] == f"{drifted.path}/compare.html"
    assert f"capture {drifted.id}  {words}: {drifted.path}/compare.html" in render_history_text(
        model
    )


def test_without_a_baseline_nothing_drifts(tmp_path, monkeypatch):
    _, rows, model = _run(tmp_path, monkeypatch, [0.005, 0.5, 0.9])
    # GIVEN a P99 rising 100-fold over the first three captures THEN no drift is judged
    assert [(r.drift, r.kept_whole) for r in rows] == [
        (False, True),
        (False, False),
        (False, False),
    ]
    assert "no baseline" in model["captures"][-1]["latency"]


def test_the_p99_and_its_baseline_are_exported_in_seconds():
    series = report_series(lock_report(), 1.0, (80.0, 5.0))
    assert series["diagnose_latency_p99_seconds"] == [({}, pytest.approx(0.08))]
    assert series["diagnose_latency_baseline_seconds"] == [({}, pytest.approx(0.005))]
    assert report_series(lock_report())["diagnose_latency_p99_seconds"] == []
