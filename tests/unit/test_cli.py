"""One command line: --json wherever there is a result, -o - and -o /dev/stdout for one
format, a clear one-line message for every bad value. The real CLI (in a subprocess where
stdout itself is under test, in-process otherwise), on the recorded bundle: no process is
captured here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from diagnose.cli import main
from diagnose.cli.common import report_capture
from tests.conftest import FIXTURES, ROOT

NO_SUCH_PID = "4000000"  # above the kernel's pid_max: a check that regressed fails fast


def cli(*args: str, cwd: Path, stdout: int | object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "diagnose", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(cwd),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    """``diagnose ARGS`` in this process (fast): exit code, stdout, stderr."""
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click < 8.2
    except TypeError:
        runner = CliRunner()
    r = runner.invoke(main, list(args))
    return subprocess.CompletedProcess(list(args), r.exit_code, r.stdout, r.stderr)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "bundles" / "lock_contention", out)
    return out


def test_report_has_json(bundle):
    res = run_main("report", str(bundle), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["schema"] == "diagnose.report/1"  # stdout: the JSON only
    assert (bundle / "report.html").is_file()  # the files are written as without --json


@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_report_o_dash_writes_one_format_to_stdout(bundle, tmp_path, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    res = run_main("report", str(bundle), "--format", fmt, "-o", "-")
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "-").exists()
    if fmt == "json":
        assert json.loads(res.stdout)["schema"] == "diagnose.report/1"
    elif fmt == "md":
        assert res.stdout.startswith("# diagnose: ")
    else:
        assert res.stdout.startswith("<!DOCTYPE html>") and res.stdout.rstrip().endswith("</html>")


def test_o_dash_with_several_formats_says_to_choose_one(bundle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["report", str(bundle)], ["compare", str(bundle), str(bundle)]):
        res = run_main(*args, "-o", "-")
        assert res.returncode == 2, res.stderr
        assert res.stdout == "" and not (tmp_path / "-").exists()
        assert res.stderr.strip() == (
            "diagnose: error: -o - takes one report, not 3: choose one with --format html, md "
            "or json"
        )


def test_o_dev_stdout_with_one_format(bundle, tmp_path):
    # a pipe
    res = cli("report", str(bundle), "--format", "md", "-o", "/dev/stdout", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("# diagnose: ") and "Report:" not in res.stdout
    # a file: /dev/stdout is then a link to it, which must stay a link (not be replaced)
    target = tmp_path / "out.json"
    with target.open("w") as fh:
        res = cli("compare", str(bundle), str(bundle), "--format", "json", "-o", "/dev/stdout",
                  cwd=tmp_path, stdout=fh)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(target.read_text())["schema"] == "diagnose.compare/1"
    assert Path("/dev/stdout").is_symlink()


def test_bundle_directory_cannot_be_stdout():
    res = run_main("attach", NO_SUCH_PID, "-o", "-")
    assert res.returncode == 2
    assert "--json prints the report on stdout" in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["attach", NO_SUCH_PID, "-d", "0"],
         "--duration must be more than 0 and at most 86400 seconds (24 hours), not 0"),
        (["attach", NO_SUCH_PID, "-d", "100000"],
         "--duration must be more than 0 and at most 86400 seconds (24 hours), not 100000"),
        (["attach", NO_SUCH_PID, "--rate", "0"], "--rate must be 1 to 1000 samples per second, not 0"),
        (["attach", NO_SUCH_PID, "--proc-rate", "500"],
         "--proc-rate must be 1 to 200 ticks per second, not 500"),
        (["attach", NO_SUCH_PID, "--max-bundle-mb", "0"], "--max-bundle-mb must be at least 1 (MiB), not 0"),
        (["attach", NO_SUCH_PID, "--sched-events", "999"],
         "--sched-events must be 1000 to 10000000 events, not 999"),
        (["attach", NO_SUCH_PID, "--workers", "most"],
         "--workers takes all, busiest or PIDs separated by commas, not 'most'"),
        (["run", "--warmup", "-1", "--", "true"], "--warmup must be 0 to 3600 seconds, not -1"),
        (["run", "--grace", "-1", "--", "true"], "--grace must be 0 to 600 seconds, not -1"),
        (["demo", "-d", "0"],
         "--duration must be more than 0 and at most 86400 seconds (24 hours), not 0"),
        (["demo", "--sample", "nope"], "no sample named 'nope'; available: "),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else "",
)  # fmt: skip
def test_each_bad_value_has_a_clear_message(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    res = run_main(*args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"diagnose: error: {message}"), res.stderr
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


def test_demo_list_says_what_each_sample_shows():
    res = run_main("demo", "--list")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # sweep_* wait for load from diagnose sweep: not demo samples
    names = sorted(
        p.stem for p in (ROOT / "samples").glob("[!_]*.py") if not p.stem.startswith("sweep_")
    )
    assert [ln.split()[0] for ln in lines] == names
    shows = dict(ln.split(maxsplit=1) for ln in lines)
    assert shows["lock_contention"].startswith(
        "lock: every request thread runs the model under one shared lock"
    )
    assert shows["lock_contention"].endswith("(the default)")
    assert all(":" in text for text in shows.values()), shows  # "category: what it does"
    listed = json.loads(run_main("demo", "--list", "--json").stdout)
    assert [s["name"] for s in listed] == names and all(s["shows"] for s in listed)


def test_rules_have_json(tmp_path):
    res = run_main("rules", "list", "--json")
    assert res.returncode == 0, res.stderr
    rules = json.loads(res.stdout)["rules"]
    assert any(r["id"] == "lock.contended" for r in rules)
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "x.toml").write_text(
        '[[rule]]\nid = "team.x"\nwhen = "busy_share_lock >"\n'
    )
    res = run_main("rules", "check", str(tmp_path / "team"), "--json")
    assert res.returncode == 8
    problems = json.loads(res.stdout)["problems"]
    assert len(problems) == 1 and problems[0]["where"].startswith(str(tmp_path / "team" / "x.toml"))


@pytest.mark.parametrize("as_json", [False, True])
def test_the_target_selection_note_is_printed_once(bundle, capfd, as_json):
    # GIVEN a capture whose target was chosen under a master (the selection's note)
    note = "PID 5601 is a uvicorn master, with 2 workers (5606, 5607)"
    doc = json.loads((bundle / "manifest.json").read_text())
    doc["target"]["note"] = note
    (bundle / "manifest.json").write_text(json.dumps(doc))
    result = SimpleNamespace(
        target=SimpleNamespace(note=note),
        writer=None,
        bundle=bundle,
        manifest=SimpleNamespace(capture=SimpleNamespace(ended_by="duration")),
        partial=False,
    )
    # WHEN its report is written and summarised (or printed as JSON)
    report_capture(result, ["json"], (), as_json)  # type: ignore[arg-type]
    out, err = capfd.readouterr()
    # THEN the note reaches the terminal once: in the summary, or on stderr beside the JSON
    said = (out if not as_json else "") + err
    assert " ".join(said.split()).count(note) == 1, said
