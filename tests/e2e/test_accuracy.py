"""The accuracy test: attach diagnose to each sample service and assert its verdict.

Each sample (samples/README.md) has one known bottleneck. diagnose captures it for a few
seconds with every collector this host supports, sharing the host's cores with it, and
must name that bottleneck with evidence and fixes.

On a shared machine other processes can take most of the cores during a capture (the
kernel shares CPU between sessions: with two other busy sessions a sample gets a third of
two cores). The analysis then rightly puts that first (scheduling, cpu_contention: threads
wait longer for a core than they run) and the sample's own bottleneck second. So:

- an attempt with the expected verdict passes;
- a wrong verdict with the host measured busy (other processes, neither the target nor
  diagnose, holding a quarter of the cores or more, from the bundle itself) is retried
  after a pause, three attempts in all; if none gets the verdict, one whose verdict is
  cpu_contention with the expected bottleneck ranked right after it is accepted, with a
  warning that says so;
- anything else fails at once, listing every attempt's measurements.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from diagnose.app.report import diagnose
from diagnose.bundle import Bundle
from diagnose.collect.base import CaptureOptions
from diagnose.collect.registry import COLLECTORS
from diagnose.collect.session import capture
from tests.conftest import pyenv_python, run_sample

CAPTURE_S = 4.0
ATTEMPTS = 3
PAUSE_S = 3.0  # between attempts on a busy host
BUSY_HOST = 0.25  # host_foreign_cpu_share at which a wrong verdict is blamed on the host
NEEDS_PERF = "needs the perf collector (native stacks)"
SHOWN = ("busy_threads_mean", "busy_share_running", "busy_share_runnable", "busy_share_lock",
         "busy_share_gil", "busy_share_io", "runq_to_oncpu_ratio", "cpu_bound_threads",
         "host_foreign_cpu_share", "tool_cpu_share", "oncpu_source", "oncpu_samples")  # fmt: skip


@dataclass(frozen=True)
class Case:
    sample: str
    primary: str
    kind: str | None
    #: other kinds that are as right: two findings of one bottleneck, each verified by its
    #: fix (samples/README.md)
    also: tuple[str, ...] = ()
    warmup: float = 1.5  # seconds before attaching: imports, model set-up, first requests
    needs_perf: bool = False
    collectors: tuple[str, ...] | None = None  # None: every collector this host supports
    python: str | None = None  # the interpreter to run the sample with (default: this one)
    seconds: float = CAPTURE_S  # capture length: at least the sample's measured stable one

    @property
    def expected(self) -> str:
        return f"{self.primary}/{'|'.join(str(k) for k in (self.kind, *self.also))}"

    def matches(self, category: str, kind: str | None) -> bool:
        return category == self.primary and (kind == self.kind or kind in self.also)


CASES = [
    # its one tokeniser thread is saturated and holds the GIL the model workers wait for:
    # preprocess.serial and preprocess.holds_gil both fire, at close scores (0.44 and 0.45 in
    # a CI run), and both are right by the fixes measured (samples/README.md): a cheaper
    # tokeniser gains 2.55x, a second tokeniser thread 0.86x (it only queues on the GIL)
    Case("preprocess_tokenize", "preprocess", "serial", also=("gil",), seconds=6.0),
    Case("lock_contention", "lock", "mutex"),
    Case("gil_contention", "lock", "gil"),
    Case("oversubscription", "scheduling", "oversubscription", warmup=3.0),
    Case("io_wait", "io", "dependency"),
    Case("idle_service", "idle", None),
    Case("compute_gemm", "compute", "kernels", needs_perf=True),
    Case("memory_copies", "memory_bandwidth", "memory_kernels", needs_perf=True),
]


def attempt(case: Case, out: Path) -> dict[str, Any]:
    """Start the sample, capture it, return the report dict (the report.json contract)."""
    with run_sample(
        case.sample,
        python=case.python,
        seconds=case.seconds + case.warmup + 30,
        warmup=case.warmup,
    ) as s:
        capture(
            s.pid,
            out,
            CaptureOptions(duration=case.seconds, collectors=case.collectors),
            follow_children=False,
        )
    bundle = Bundle.open(out)
    if case.needs_perf and not bundle.usable("perf"):
        rec = bundle.collector("perf")
        pytest.skip(f"{NEEDS_PERF}: perf {rec.status.value}: {rec.reason}")
    return diagnose(out).report


def describe(report: dict[str, Any]) -> str:
    v = report["verdict"]
    m = report["metrics"]
    found = ", ".join(f"{f['id']} {f['score']}" for f in report["findings"]) or "none"
    shown = ", ".join(f"{k}={m.get(k)}" for k in SHOWN)
    collectors = ", ".join(
        f"{n} {c['status']}" + (f" ({c['reason']})" if c["reason"] else "")
        for n, c in report["collectors"].items()
    )
    return (
        f"{v['primary']}/{v['kind']} ({v['confidence']}); findings: {found}; {shown}; "
        f"collectors: {collectors}"
    )


def busy_host(report: dict[str, Any]) -> bool:
    return (report["metrics"].get("host_foreign_cpu_share") or 0) >= BUSY_HOST


def behind_contention(report: dict[str, Any], case: Case) -> bool:
    """cpu_contention first, then the sample's own bottleneck (or none, for 'unknown')."""
    v = report["verdict"]
    if (v["primary"], v["kind"]) != ("scheduling", "cpu_contention"):
        return False
    rest = [(r["category"], r["kind"]) for r in v["ranking"] if r["category"] != "scheduling"]
    if case.primary == "unknown":
        return not rest
    return bool(rest) and case.matches(*rest[0])


def judged(case: Case, tmp_path: Path) -> dict[str, Any]:
    """The report of an attempt that got the expected verdict (see the module's doc)."""
    seen = []
    fallback = None
    for i in range(ATTEMPTS):
        report = attempt(case, tmp_path / f"bundle-{i}")
        v = report["verdict"]
        if case.matches(v["primary"], v["kind"]):
            return report
        seen.append(describe(report))
        if not busy_host(report):
            break
        if fallback is None and behind_contention(report, case):
            fallback = report
        time.sleep(PAUSE_S)
    else:
        if fallback is not None:
            warnings.warn(
                f"{case.sample}: other processes held the cores in every attempt; accepted "
                f"{case.expected} ranked right after cpu_contention:\n  " + "\n  ".join(seen),
                stacklevel=2,
            )
            return fallback
    pytest.fail(f"{case.sample}: expected {case.expected}, got:\n  " + "\n  ".join(seen))


def expected_finding(report: dict[str, Any], case: Case) -> dict[str, Any]:
    return next(
        f
        for f in report["findings"]
        if case.matches(f["category"], f["kind"]) and not f["advisory"]
    )


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Case], dict[str, Any]]:
    """judged(), once per case for the whole module: the detail tests reuse the capture."""
    cache: dict[Case, dict[str, Any]] = {}

    def get(case: Case) -> dict[str, Any]:
        if case not in cache:
            cache[case] = judged(case, tmp_path_factory.mktemp(case.sample))
        return cache[case]

    return get


@pytest.mark.parametrize("case", CASES, ids=[c.sample for c in CASES])
def test_sample_gets_its_verdict(case: Case, verdicts: Callable[[Case], dict[str, Any]]) -> None:
    if case.needs_perf and "perf" not in COLLECTORS:
        pytest.skip(f"{NEEDS_PERF}: this diagnose has no perf collector")
    report = verdicts(case)
    v = report["verdict"]
    assert 0 < v["confidence"] <= 1
    if case.primary == "idle":
        assert [f["category"] for f in report["findings"] if not f["advisory"]] == ["idle"]
        return
    found = expected_finding(report, case)
    assert found["fixes"], "a verdict comes with fixes"
    measured = [e for e in found["evidence"] if e["value"] is not None]
    assert len(measured) >= 3, found["evidence"]


def test_lock_verdict_points_at_the_lock_and_its_holder(verdicts) -> None:
    report = verdicts(CASES[1])
    m = report["metrics"]
    assert m["lock_top_waiters"] >= 4  # 8 request threads queue on MODEL_LOCK
    sites = [s for s, _ in report["locks"][0]["sites"]]
    if behind_contention(report, CASES[1]):
        # other processes held the cores: a starved py-spy's sample of a 4 ms wait is as
        # often the line before it (np.ones, waiting for the GIL) as the `with` line
        assert any("lock_contention.py" in s for s in sites), sites
    else:
        assert "lock_contention.py" in m["lock_top_site"], sites
    assert m["lock_top_holder_site"].startswith("predict (")
    assert m["lock_top_address"].startswith("0x")


def test_oversubscription_fix_has_the_numbers(verdicts) -> None:
    report = verdicts(CASES[3])
    m = report["metrics"]
    assert m["app_threads_busy"] == 4
    assert m["intra_op_threads_per_app"] == pytest.approx(4, abs=0.5)  # 3 pool threads + caller
    assert m["cpu_bound_threads"] > m["cores_available"]
    cores = m["cores_available"]
    expected = max(1, int(cores // 4))
    fix = expected_finding(report, CASES[3])["fixes"][0]
    assert fix.startswith(
        f"Set intra_op_num_threads to {expected}: {cores:g} cores available, "
        "4 application threads in 1 process, 4 intra-op threads each"
    ), fix


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_gil_verdict_on_other_pythons(version: str, tmp_path: Path) -> None:
    # where CPython keeps the GIL changes between versions (3.12 made it per interpreter):
    # its waiters must still be told apart from other lock waits
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"Python {version} is not installed under pyenv")
    report = judged(Case("gil_contention", "lock", "gil", python=python), tmp_path)
    assert report["metrics"]["python_version"] == version
    assert report["metrics"]["gil_waiters_mean"] >= 1


def test_compute_without_native_stacks_is_the_model_and_names_perf(tmp_path: Path) -> None:
    # GIVEN the compute sample captured without perf (as on a host that has none)
    no_perf = ("system", "proc", "pyspy", "gil")
    case = Case("compute_gemm", "compute", "model", collectors=no_perf)
    report = judged(case, tmp_path)
    # THEN the time is inside the model, the kernel shares are not measured (null, not 0),
    # and the confidence is lowered with a note that names what could not be ruled out
    m = report["metrics"]
    v = report["verdict"]
    assert m["oncpu_share_model"] >= 0.5
    assert m["oncpu_share_compute"] is None and m["oncpu_share_memory"] is None
    assert "perf" in report["unmeasured"]["oncpu_share_memory"]
    if v["primary"] == "compute":
        assert v["confidence"] < expected_finding(report, case)["score"]
        assert any("could not rule out memory_bandwidth" in n for n in v["confidence_notes"])


def test_memory_copies_without_native_stacks_get_no_invented_verdict(tmp_path: Path) -> None:
    # GIVEN the memory-bound sample captured without perf: its time is in NumPy calls that
    # no Python frame names as the model or as preprocessing
    no_perf = ("system", "proc", "pyspy", "gil")
    report = judged(Case("memory_copies", "unknown", None, collectors=no_perf), tmp_path)
    # THEN no bottleneck is named, and the report says which rules lacked which data
    v = report["verdict"]
    assert not [f for f in report["findings"] if f["category"] not in ("scheduling",)]
    if v["primary"] == "unknown":  # (not behind other processes' contention)
        assert v["confidence"] == 0
        assert "could not be evaluated for lack of data" in v["headline"]
        lacking = {n["id"]: n for n in report["not_evaluated"]}
        reasons = lacking["memory_bandwidth.memory_bound_kernels"]["reasons"]
        assert any("perf" in r for r in reasons), reasons


def test_json_contract_attach_then_report_from_the_bundle_alone(tmp_path: Path) -> None:
    """`diagnose attach PID --duration S --out DIR` leaves DIR/report.json; `diagnose
    report DIR` recomputes it from the bundle alone (here with a team rule that overrides
    a built-in one, after the target has exited)."""
    out = tmp_path / "bundle"
    with run_sample("lock_contention", seconds=40) as s:
        res = subprocess.run(
            [sys.executable, "-m", "diagnose", "attach", str(s.pid), "--duration", "3",
             "--out", str(out), "--format", "json,md"],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    rep = json.loads((out / "report.json").read_text())
    assert rep["schema"] == "diagnose.report/1"
    v = rep["verdict"]
    assert v["primary"] in ("preprocess", "lock", "scheduling", "compute",
                            "memory_bandwidth", "io", "idle", "unknown")  # fmt: skip
    assert v["kind"] is None or isinstance(v["kind"], str)
    assert 0 <= v["confidence"] <= 1
    assert isinstance(v["ranking"], list) and all("category" in r for r in v["ranking"])
    assert isinstance(rep["findings"], list) and isinstance(rep["metrics"], dict)
    assert set(rep["metrics"]) >= {"busy_threads_mean", "lock_top_waiters", "cores_available"}
    # WHEN a team overrides lock.contended and the report is recomputed from the bundle
    team = tmp_path / "team"
    team.mkdir()
    (team / "lock.toml").write_text(
        '[[rule]]\nid = "lock.contended"\ncategory = "lock"\nkind = "team_mutex"\n'
        'title = "Team lock rule"\nwhen = "lock_top_waiters >= 2"\nscore = "0.99"\n'
        'summary = "{lock_top_waiters} waiters"\n',
        encoding="utf-8",
    )
    res = subprocess.run(
        [sys.executable, "-m", "diagnose", "report", str(out), "--rules", str(team),
         "--format", "json", "-q"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    again = json.loads((out / "report.json").read_text())
    # THEN the same measurements, judged by the new rule
    assert again["metrics"]["lock_top_waiters"] == rep["metrics"]["lock_top_waiters"]
    assert (again["verdict"]["primary"], again["verdict"]["kind"]) == ("lock", "team_mutex")
    assert again["findings"][0]["title"] == "Team lock rule"
