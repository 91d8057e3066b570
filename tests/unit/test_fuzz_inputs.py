"""Every file a user hands diagnose, fuzzed: a load generator's stats file (compare's
--before-load/--after-load), a sweep's record (sweep.json), a report.json. Each reader
either returns what the rest of diagnose can use, or raises its one documented error (one
line, exit 7 at the CLI); nothing else escapes, and what a reader accepts never makes the
code after it fail (the sweep report is built from any accepted record; any accepted
report is rendered). Hunting: ``DIAGNOSE_FUZZ=N pytest tests/unit/test_fuzz_inputs.py``
(docs/reliability.md has the last long run's seed and count)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.app.report import write_reports
from diagnose.errors import BadBundle
from diagnose.render.markdown import render_markdown
from diagnose.render.schema import parse_report
from diagnose.sweep.loadgen import read_stats_file
from diagnose.sweep.model import build_sweep_report
from diagnose.sweep.record import load_record
from tests.conftest import FIXTURES
from tests.unit.fuzzing import fuzz
from tests.unit.test_cli import run_main
from tests.unit.test_sweep_report import POOL, record, setting, step

FUZZ = fuzz(150)

numbers = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, -1, 1e-308, 5e-324, 1e308, 2**63, -(2**63) - 1])
)
leaves = (
    st.none()
    | st.booleans()
    | numbers
    | st.text(max_size=20)
    | st.sampled_from(["..", "../../x", "/etc/x", "a/b", "", "steps/../../y", "\x00"])
)
json_values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


def paths_in(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths_in(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths_in(v, (*prefix, i))
    return out


def mutate(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``doc`` with the value at ``path`` replaced (the root itself for ``()``)."""
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def dumps(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True)


# --- load generators' stats files ------------------------------------------------------------

STATS_HEADER = "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Max Response Time,Requests/s,50%,95%,99%\n"


def read_or_refuse(tmp_path: Path, text: str) -> None:
    path = tmp_path / "stats"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        f = read_stats_file(path)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    json.dumps(f.to_dict(), allow_nan=False)  # what compare renders: finite throughout
    assert f.qps >= 0 and 0 <= f.error_rate <= 1


@FUZZ
@given(
    doc=st.dictionaries(
        st.sampled_from(
            ["requests", "seconds", "failures", "p99_ms", "p50_ms", "duration_s", "errors", "tool"]
        ),
        json_values,
        max_size=6,
    )
)
def test_any_json_stats_line_is_read_or_refused(tmp_path_factory, doc):
    read_or_refuse(tmp_path_factory.mktemp("s"), "noise\n" + dumps(doc) + "\n")


@FUZZ
@given(
    row=st.lists(st.text(alphabet="0123456789.-eNA/inf,x", max_size=12), min_size=11, max_size=11)
)
def test_any_locust_csv_is_read_or_refused(tmp_path_factory, row):
    text = STATS_HEADER + ",".join(["", "Aggregated", *row[2:]]) + "\n"
    read_or_refuse(tmp_path_factory.mktemp("s"), text)


@pytest.mark.parametrize(
    "text",
    [
        '{"requests": Infinity, "seconds": 5}',
        '{"requests": 10, "seconds": NaN}',
        '{"requests": 10, "seconds": 1e-308}',
        '{"requests": 1e400, "seconds": 5}',
        '{"requests": 10, "seconds": 5, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        STATS_HEADER + ',Aggregated,"' + "9" * 140_000 + '",0,1,1,1,1,1,1,1\n',
    ],
    ids=["Infinity", "NaN", "tiny seconds", "1e400", "100,000 deep", "CSV field over 131,072"],
)
def test_compare_refuses_a_crafted_stats_file_in_one_line(tmp_path, text, report_json):
    stats = tmp_path / "stats.txt"
    stats.write_text(text)
    res = run_main(
        "compare",
        str(report_json),
        str(report_json),
        "--before-load",
        str(stats),
        "-o",
        str(tmp_path / "out"),
    )
    assert res.returncode in (0, 7), res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") <= 1, res.stderr
    if res.returncode == 0:  # read as figures: they were in range
        assert "Infinity" not in (tmp_path / "out" / "compare.json").read_text()


# --- sweep.json ------------------------------------------------------------------------------

GOOD_RECORD = record(
    [setting("base", "base", [step("base", u, q, p) for u, q, p in POOL])], sla=200.0, peak=100.0
)
RECORD_PATHS = paths_in(GOOD_RECORD)


@FUZZ
@given(path=st.sampled_from(RECORD_PATHS), value=json_values)
def test_any_sweep_record_is_read_or_refused_and_what_is_read_reports(
    tmp_path_factory, path, value
):
    d = tmp_path_factory.mktemp("sweep")
    (d / "sweep.json").write_text(dumps(mutate(GOOD_RECORD, path, value)))
    try:
        rec = load_record(d)
    except BadBundle as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    model = build_sweep_report(rec, {}, {}, str(d))
    json.dumps(model, allow_nan=False)


# --- report.json -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report_json(tmp_path_factory) -> Path:
    import shutil

    bundle = tmp_path_factory.mktemp("r") / "bundle"
    shutil.copytree(FIXTURES / "bundles" / "lock_contention", bundle)
    write_reports(bundle, ["json"])
    return bundle / "report.json"


@FUZZ
@given(data=st.data(), value=json_values)
def test_any_report_json_is_read_or_refused_and_what_is_read_renders(report_json, data, value):
    good = json.loads(report_json.read_text())
    shallow = [p for p in paths_in(good) if len(p) <= 4]
    path = data.draw(st.sampled_from(shallow))
    raw = dumps(mutate(good, path, value)).encode()
    try:
        report = parse_report(raw, Path("report.json"))
    except BadBundle as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    render_markdown(report)
