"""The sample zoo's descriptors and the load measurement, without starting anything.

Every samples/services/NAME/sample.toml must load, name a verdict in diagnose's vocabulary
(a category and kind some rule in rules/*.toml can give), start its service on the port it
is handed, and carry a counterfactual that changes something. locust's history is read by
benchmarks.zoo.locust_rps: checked on a hand-built history file.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks.accuracy import hand_written
from benchmarks.zoo import SERVICES, all_samples, locust_rps
from diagnose.tomlfile import tomllib
from tests.conftest import ROOT

SAMPLES = all_samples()


def vocabulary() -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for path in (ROOT / "rules").glob("*.toml"):
        for rule in tomllib.loads(path.read_text()).get("rule", []):
            kinds.setdefault(rule["category"], set()).add(rule.get("kind"))
    return kinds


def test_zoo_has_at_least_16_services_each_in_its_own_directory():
    assert len(SAMPLES) >= 16
    for s in SAMPLES:
        assert s.dir.parent == SERVICES
        assert (s.dir / "app.py").exists(), s.name


@pytest.mark.parametrize("s", SAMPLES, ids=lambda s: s.name)
def test_descriptor_names_a_verdict_diagnose_can_give(s):
    vocab = vocabulary()
    assert s.expected_category in vocab, s.expected_category
    for kind in s.expected_kinds:
        assert kind in vocab[s.expected_category], (s.expected_category, kind)
    for alt in s.alternatives:
        assert alt.category in vocab and alt.kind in vocab[alt.category]
        assert (alt.category, alt.kind) != (s.expected_category, s.expected_kinds[0])


@pytest.mark.parametrize("s", SAMPLES, ids=lambda s: s.name)
def test_descriptor_starts_on_its_port_and_has_a_counterfactual(s):
    assert any("{port}" in a for a in s.argv), "the service must listen on the port it is given"
    fix = s.fix
    assert fix.env or fix.args or fix.users, "the counterfactual must change something"
    for k, v in fix.env.items():
        assert s.env.get(k) != v, f"{k}={v} is already the service's setting"
    if s.check == "idle":
        assert fix.users and fix.users > s.users, "idle: the counterfactual offers more load"
    if s.check == "io":
        assert s.expected_category == "io"


def test_hand_written_samples_expected_verdicts_come_from_the_readme():
    got = {t.name: t for t in hand_written()}
    assert got["lock_contention"].expected == "lock/mutex"
    assert got["compute_gemm"].expected == "compute/kernels|model"
    assert got["idle_service"].expected == "idle"
    on_disk = {p.stem for p in (ROOT / "samples").glob("*.py") if not p.name.startswith("_")}
    assert set(got) <= on_disk


def _history(path: Path, rows: list[tuple[int, int, int]]) -> Path:
    out = Path(f"{path}_stats_history.csv")
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Timestamp", "User Count", "Type", "Name", "Total Request Count",
                    "Total Failure Count"])  # fmt: skip
        for t, n, fails in rows:
            w.writerow([t, 8, "POST", "/predict", n, fails])  # per-endpoint rows are ignored
            w.writerow([t, 8, "", "Aggregated", n, fails])
    return out


def test_locust_rps_leaves_out_the_ramp_up_and_counts_successes(tmp_path):
    # GIVEN 2 s of ramp-up at 5/s, then 10 s at 50/s of which 10/s fail
    rows = [(100, 0, 0), (101, 5, 0), (102, 10, 0)]
    rows += [(102 + i, 10 + 50 * i, 10 * i) for i in range(1, 11)]
    _history(tmp_path / "load", rows)
    # WHEN the first 2 s are skipped
    got = locust_rps(tmp_path / "load", skip_s=2)
    # THEN the rate is the successes over the steady window
    assert got["rps"] == pytest.approx(40.0)
    assert got["fail_rps"] == pytest.approx(10.0)
    assert got["seconds"] == 10


def test_locust_rps_without_history_is_not_a_number(tmp_path):
    got = locust_rps(tmp_path / "missing", skip_s=2)
    assert got["rps"] != got["rps"]  # NaN: not measured, never 0
