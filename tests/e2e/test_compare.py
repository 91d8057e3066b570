"""diagnose compare on two real bundles of one sample with one variable changed: 16 request
threads on one model lock (before) against 1 (after).

Why 16 against 1: the contrast must hold on a noisy 2-core host. With 8 against 2, the
share of busy time spent waiting on the lock fell by 0.09 on a quiet host (0.44 -> 0.35,
twice in six runs; the test wants 0.2): two threads on one lock wait on it a third to half
of the time. One thread never waits on a lock nobody else takes (share 0.0 in every run),
and sixteen wait on it most of the time (0.78-0.81 measured with a load average of 6-12,
where eight gave 0.54-0.60)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from diagnose.collect.base import CaptureOptions
from diagnose.run import run_command
from tests.e2e.browser import chromium, full_page_screenshot
from tests.e2e.cli import run_cli, sample_argv


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> tuple[Path, Path]:
    """The two bundles; next to each, BUNDLE.log holds the sample's own stats line
    (requests, seconds, p50_ms, p99_ms, mean_ms over its run), printed when diagnose stops it."""
    base = tmp_path_factory.mktemp("compare")
    out = []
    for threads in ("16", "1"):
        path = base / f"threads-{threads}"
        with open(path.with_suffix(".log"), "w") as log:
            run_command(
                sample_argv("lock_contention", "--threads", threads, "--seconds", "60"),
                path,
                CaptureOptions(duration=4),
                warmup=1.0,
                stdout=log,
            )
        out.append(path)
    return out[0], out[1]


@pytest.fixture(scope="module")
def comparison(bundles) -> dict:
    before, after = bundles
    res = run_cli("compare", str(before), str(after), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def metric(c: dict, name: str) -> dict:
    return next(m for m in c["metrics"] if m["name"] == name)


def test_fewer_threads_on_one_lock_shows_less_lock_waiting(comparison):
    c = comparison
    # GIVEN 16 threads queueing on one lock (the verdict itself is the accuracy tests' business:
    # on a loaded 2-core host scheduling can outrank it), both verdicts are reported
    assert {c["verdict"]["before"]["primary"], c["verdict"]["after"]["primary"]} <= {
        "lock", "scheduling", "compute", "memory_bandwidth", "preprocess", "io", "idle", "unknown"
    }  # fmt: skip
    # the lock had all 16 threads waiting on it before, none after
    waiters = metric(c, "lock_top_waiters")
    assert (waiters["before"], waiters["after"], waiters["change"]) == (16, 0, "better")
    # threads spend much less of their busy time waiting on it, more running
    lock = metric(c, "busy_share_lock")
    assert lock["change"] == "better" and lock["delta"] <= -0.2, lock
    assert metric(c, "busy_share_running")["change"] == "better"
    assert metric(c, "lock_top_wait_s")["change"] == "better"
    assert metric(c, "app_threads_busy")["change"] == "changed"  # 16 -> 1, no direction
    # the lock finding fired before, and is gone or scores lower
    f = c["findings"]
    gone = [x["id"] for x in f["disappeared"]]
    stayed = {x["id"]: x for x in f["stayed"]}
    assert "lock.contended" in gone or stayed["lock.contended"]["score_delta"] < 0


def test_the_services_own_figures_come_first_and_the_fix_reads_as_one(bundles, tmp_path):
    # GIVEN the sample's own figures for each run (its stats line, as a load generator's)
    before, after = bundles
    loads = ["--before-load", str(before.with_suffix(".log")),
             "--after-load", str(after.with_suffix(".log"))]  # fmt: skip
    res = run_cli("compare", str(before), str(after), *loads, "--format", "md",
                  "-o", str(tmp_path / "c.md"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    res_json = run_cli("compare", str(before), str(after), *loads, "--json", "--format", "json",
                       "-o", str(tmp_path / "c.json"))  # fmt: skip
    assert res_json.returncode == 0, res_json.stderr
    c = json.loads(res_json.stdout)
    s = c["service"]
    rows = {r["name"]: r for r in s["rows"]}
    # THEN the latency the fix was for leads: 16 threads on one lock wait for each other, one
    # thread never waits. The mean is the contrast that holds: by Little's law it is 16 calls
    # against one at about the same throughput. The p50 is not: the lock is not fair, and on
    # a loaded host one thread can re-take it again and again (p50 one call, p99 seconds; a CI
    # run had p50 "same").
    mean = rows["mean_ms"]
    assert mean["change"] == "better" and mean["after"] < mean["before"] / 3, mean
    assert rows["p99_ms"]["change"] == "better", rows["p99_ms"]
    assert s["outcome"] != "regressed", s
    # the service's line first (wrapped at the width; a loaded run's figures make it longer),
    # its continuation indented, then the verdict
    lines = res.stdout.splitlines()
    verdict = next(i for i, ln in enumerate(lines) if not ln.startswith("  ") and i > 0)
    service = " ".join(ln.strip() for ln in lines[:verdict])  # wherever the width broke it
    assert service.startswith("Service: ") and "p50 " in service, lines[: verdict + 1]
    assert lines[verdict].startswith("Verdict: "), lines[: verdict + 1]
    md = (tmp_path / "c.md").read_text()
    assert md.index("## The service") < md.index("## Verdict") < md.index("## What changed")
    # the verdict change in words, from the two verdicts
    assert c["verdict"]["words"].startswith(("the ", "still ", "was "))
    # the threads' busy time freed from the lock went elsewhere (to queueing for a core on a
    # loaded host): none of it reads as worse, whatever the throughput did
    lock = metric(c, "busy_share_lock")
    assert lock["change"] == "better" and lock["delta"] <= -0.2, lock
    worse = [m["name"] for m in c["metrics"] if m["change"] == "worse"]
    assert not [n for n in worse if n.startswith("busy_share_")], worse


def test_bad_service_figures_are_refused_before_analysing(bundles, tmp_path):
    before, after = bundles
    junk = tmp_path / "junk.txt"
    junk.write_text("Segmentation fault\n")
    res = run_cli("compare", str(before), str(after), "--before-load", str(junk),
                  "--after-qps", "12", "--json")  # fmt: skip
    assert res.returncode == 7, res.stderr
    assert res.stderr.count("\n") == 1 and "--before-load" in res.stderr
    res = run_cli("compare", str(before), str(after), "--before-qps", "-3", "--json")
    assert res.returncode == 2 and "--before-qps" in res.stderr, res.stderr


def test_differential_flame_graph_shows_the_lock_wait_colder(comparison):
    waits = comparison["flames"]["waits"]
    top = waits["colder"][0]
    assert top["stack"][0] == "lock wait"
    assert top["stack"][1] == "thread: handler-N"  # TIDs and thread numbers normalised
    assert any(fr.startswith("handle (") for fr in top["stack"])  # `with MODEL_LOCK:`
    assert top["before"] > 2 * top["after"] and top["before"] > 1.5  # threads waiting
    tree = waits["tree"]
    assert tree["labels"][0] == "all" and tree["delta"][0] < 0
    wall = comparison["flames"]["wall"]
    assert wall["tree"]["before"][0] > wall["tree"]["after"][0]  # 16 threads' time vs 1


def test_writes_html_md_json_into_the_after_bundle(bundles, comparison):
    _, after = bundles
    for name in ("compare.html", "compare.md", "compare.json"):
        path = after / name
        assert path.is_file()
        assert path.stat().st_mode & 0o077 == 0
    md = (after / "compare.md").read_text()
    assert "| `busy_share_lock` |" in md and "**better**" in md
    assert "### Waits: lock, GIL, I/O (threads)" in md
    html = (after / "compare.html").read_text()
    assert 'id="flame-waits"' in html
    assert "https://" not in html.split("<script>", 1)[0]  # nothing fetched
    saved = json.loads((after / "compare.json").read_text())
    assert saved["metrics"] == comparison["metrics"]


def test_a_bundle_against_itself_changes_nothing(bundles):
    before, _ = bundles
    res = run_cli("compare", str(before), str(before), "--json", "--format", "json",
                  "-o", str(before.parent / "self.json"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    c = json.loads(res.stdout)
    assert {m["change"] for m in c["metrics"]} == {"same"}
    assert c["caveats"] == [] and not c["verdict"]["changed"]
    assert not c["findings"]["appeared"] and not c["findings"]["disappeared"]
    assert all(not v["hotter"] and not v["colder"] for v in c["flames"].values())


def test_output_options(bundles, tmp_path):
    before, after = bundles
    res = run_cli(
        "compare", str(before), str(after), "--format", "md", "-o", str(tmp_path / "c.md")
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "c.md").read_text().startswith("# diagnose compare:")
    assert "Verdict:" in res.stdout and "Better:" in res.stdout
    res = run_cli("compare", str(before), str(after), "-o", str(tmp_path / "dir"))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [
        "compare.html",
        "compare.json",
        "compare.md",
    ]


LABELS_JS = """
return Array.from(document.querySelectorAll('#flame-waits g.slice')).map(function (g) {
  var text = g.querySelector('text'), box = g.querySelector('path');
  return [text ? text.textContent : '', text ? getComputedStyle(text).fill : '',
          box ? getComputedStyle(box).fill : ''];
});
"""


def _dark(rgb: str) -> bool:
    r, g, b = (int(x) for x in re.findall(r"\d+", rgb)[:3])
    return 0.299 * r + 0.587 * g + 0.114 * b < 128


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 800])
def test_html_draws_the_differential_flame_graphs_offline(bundles, comparison, width):
    _, after = bundles
    with chromium(width=width) as driver:
        driver.get((after / "compare.html").as_uri())
        query = (
            "return Array.from(document.querySelectorAll('.flame')).map("
            "e => [e.id, e.querySelectorAll('g.slice').length])"
        )
        # plotly draws asynchronously: on a loaded host give it time (no timing asserted)
        deadline = time.monotonic() + 20
        slices = driver.execute_script(query)
        while time.monotonic() < deadline and not all(n for _, n in slices):
            time.sleep(0.25)
            slices = driver.execute_script(query)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        labels = driver.execute_script(LABELS_JS)
        wide = driver.execute_script(
            "return document.documentElement.scrollWidth > window.innerWidth"
        )
        full_page_screenshot(driver, f"compare-{width}px.png")
    drawn = dict(slices)
    assert set(drawn) == {f"flame-{v}" for v in comparison["flames"]}
    # a view with nothing in either bundle (no thread waited, say) is not drawn, and says so
    expected = {f"flame-{k}" for k, v in comparison["flames"].items() if not v.get("missing")}
    assert expected, comparison["flames"].keys()
    assert all(drawn[k] >= 3 for k in expected), drawn
    assert not errors, errors
    assert not wide
    # readable labels: a box names its function (the file is in the hover text), and its
    # text is light on a dark box, dark on a pale one
    texts = [t for t, _, _ in labels if t]
    assert "handle" in texts and not [t for t in texts if "(/" in t or ".py)" in t], texts
    for text, ink, box in labels:
        if text and box:
            assert _dark(ink) != _dark(box), (text, ink, box)
