"""Every documented exit code (README "Exit codes", diagnose/errors.py), provoked for real.

Code 1 (a bug in diagnose) is not provoked. Each error is one line on stderr, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import capture
from diagnose.errors import ExitCode
from tests.conftest import ROOT, is_root, run_sample
from tests.e2e.cli import diagnose_argv, run_cli, wait_for
from tests.e2e.unprivileged import Unprivileged, unprivileged


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("diagnose: error: "), res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("codes") / "bundle"
    with run_sample("lock_contention", "--threads", "2", seconds=30) as s:
        capture(s.pid, out, CaptureOptions(duration=2))
    return out


def test_0_ok(bundle, tmp_path):
    res = run_cli("report", str(bundle), "--format", "json", "-o", str(tmp_path / "r.json"), "-q")
    assert res.returncode == ExitCode.OK == 0, res.stderr
    res = run_cli("compare", str(bundle), str(bundle), "-o", str(tmp_path / "c"))
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["attach", "not-a-pid"],
        ["attach", "1", "--duration", "0"],
        ["attach", "1", "--collectors", "nonsense"],
        ["run"],
        ["run", "--format", "pdf", "--", "true"],
        ["compare", "only-one"],
        ["report", "x", "--format", "docx"],
        ["no-such-command"],
    ],
    ids=lambda a: " ".join(a),
)
def test_2_bad_arguments(args):
    res = run_cli(*args)
    assert res.returncode == ExitCode.USAGE == 2, res.stderr
    assert "Traceback" not in res.stderr


def _gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid  # reaped: no such process (until the PID is reused, which takes long)


def test_3_no_target():
    res = run_cli("attach", str(_gone_pid()))
    assert res.returncode == ExitCode.NO_TARGET == 3
    assert "no process with PID" in one_line_error(res)
    res = run_cli("run", "--", "/no/such/program")
    assert res.returncode == 3
    assert "command not found" in one_line_error(res)


@pytest.fixture(scope="module")
def nobody() -> Iterator[Unprivileged]:
    """diagnose as user nobody, wherever this checkout lives (tests/e2e/unprivileged.py)."""
    if not is_root():
        pytest.skip("switching to an unprivileged user needs root")
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv (util-linux) to switch to an unprivileged user")
    with unprivileged() as u:
        yield u


def test_4_permission_denied_for_an_unprivileged_user(nobody):
    # GIVEN a service running as root, WHEN nobody tries to attach to it
    out = nobody.base / "b"
    with run_sample("lock_contention", "--threads", "2", seconds=30) as s:
        res = nobody.run("attach", str(s.pid), "-d", "2", "-o", str(out))
    # THEN exit code 4 with the fix, and nothing written
    assert res.returncode == ExitCode.PERMISSION == 4, res.stderr
    assert "SYS_PTRACE" in one_line_error(res)
    assert not out.exists()


def test_5_partial_when_the_target_exits_mid_capture(tmp_path):
    # GIVEN a service that stops a few seconds into a 12 s capture (diagnose's own start-up
    # takes a second or two on a loaded machine)
    out = tmp_path / "b"
    with run_sample("lock_contention", "--threads", "2", seconds=5) as s:
        res = run_cli("attach", str(s.pid), "-d", "12", "-o", str(out), "--json")
    # THEN exit code 5, and the partial bundle is still a bundle with its report
    assert res.returncode == ExitCode.PARTIAL == 5, res.stderr
    report = json.loads(res.stdout)
    assert report["capture"]["ended_by"] == "target_exited"
    assert report["bundle"]["complete"] is True  # the manifest was finished
    assert run_cli("report", str(out), "-q").returncode == 0


def test_6_output_directory_not_writable(nobody):
    # GIVEN a read-only directory, and a service and diagnose both running as nobody
    ro = nobody.base / "read-only"
    ro.mkdir(mode=0o555)
    service = subprocess.Popen(
        nobody.sample_argv("lock_contention", "--threads", "2", "--seconds", "30"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd="/",
        env=nobody.env,
        text=True,
    )
    try:
        # serving once its two request threads run (a sample that cannot start says why)
        wait_for(
            lambda: service.poll() is not None or _threads(service.pid) >= 3, 30, "the service"
        )
        assert service.poll() is None, service.communicate()[1]
        res = nobody.run("attach", str(service.pid), "-d", "2", "-o", str(ro / "b"))
        # THEN exit code 6, and nothing half-written
        assert res.returncode == ExitCode.OUTPUT == 6, res.stderr
        assert "not writable" in one_line_error(res)
        assert list(ro.iterdir()) == []
    finally:
        service.kill()
        service.communicate()
        ro.rmdir()


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def test_6_compare_output_not_writable(bundle, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    res = run_cli("compare", str(bundle), str(bundle), "-o", str(blocker / "out"))
    assert res.returncode == 6, res.stderr
    assert "cannot" in one_line_error(res)


DAMAGE = {
    "corrupt-manifest": (
        '{"schema": "diagnose.bundle", "sch',
        "manifest.json is corrupt or truncated",
    ),
    "no-manifest": (None, "no manifest.json"),
    "newer-schema": (
        json.dumps({"schema": "diagnose.bundle", "schema_version": 99}),
        "newer than this diagnose understands",
    ),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_7_bad_bundle(bundle, tmp_path, damage):
    broken = tmp_path / "broken"
    shutil.copytree(bundle, broken)
    text, message = DAMAGE[damage]
    if text is None:
        (broken / "manifest.json").unlink()
    else:
        (broken / "manifest.json").write_text(text)
    for args in (["report", str(broken)], ["compare", str(bundle), str(broken)]):
        res = run_cli(*args)
        assert res.returncode == ExitCode.BAD_INPUT == 7, res.stderr
        assert message in one_line_error(res)
    assert run_cli("report", str(tmp_path / "missing")).returncode == 7


def test_8_bad_rules(tmp_path):
    (tmp_path / "team.toml").write_text('[[rule]]\nid = "team.x"\nwhen = "busy_share_lock >"\n')
    res = run_cli("rules", "check", str(tmp_path))
    assert res.returncode == ExitCode.BAD_RULES == 8
    assert "team.toml" in res.stdout


def test_9_busy_when_the_process_is_already_being_captured(tmp_path):
    with run_sample("lock_contention", "--threads", "2", seconds=30) as s:
        first = subprocess.Popen(
            diagnose_argv("attach", str(s.pid), "-d", "20", "-o", str(tmp_path / "first")),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: window_opened(tmp_path / "first"), 30, "capture 1's window")
            res = run_cli("attach", str(s.pid), "-d", "2", "-o", str(tmp_path / "second"))
            # an interrupt in the window's first moments leaves collectors with nothing
            # (test_5_when_interrupted_before_the_window_opened): this one ends cleanly
            time.sleep(2.0)
        finally:
            first.send_signal(signal.SIGINT)  # the first capture ends early, cleanly
            _, err = first.communicate(timeout=60)
    assert res.returncode == ExitCode.BUSY == 9, res.stderr
    assert "another diagnose capture" in one_line_error(res)
    assert not (tmp_path / "second").exists()
    assert first.returncode == 0, err


def window_opened(out: Path) -> bool:
    """Whether the capture writing ``out`` has opened its measured window."""
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return manifest["capture"].get("window_start_s", 0.0) > 0.0  # 0 until it opens


def test_5_when_interrupted_before_the_window_opened(tmp_path):
    """Ctrl-C while the collectors start: the bundle is written, partial, and says that the
    capture ended, not that the target exited (it is still running)."""
    out = tmp_path / "b"
    with run_sample("lock_contention", "--threads", "2", seconds=30) as s:
        first = subprocess.Popen(
            diagnose_argv("attach", str(s.pid), "-d", "20", "-o", str(out)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: (out / "manifest.json").exists(), 30, "the first manifest")
        finally:
            first.send_signal(signal.SIGINT)
            stdout, err = first.communicate(timeout=60)
        assert s.proc.poll() is None
    assert first.returncode == ExitCode.PARTIAL == 5, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["state"] == "complete"
    assert manifest["capture"]["ended_by"].startswith("interrupted")
    assert manifest["capture"]["duration_actual"] < 0.5
    reasons = {k: c["reason"] for k, c in manifest["collectors"].items()}
    # the /proc sampler ticks from its start: the interrupt came before its first tick
    # (it says so) or after it (it kept that tick)
    assert reasons["proc"] == "" or "before the first tick" in reasons["proc"], reasons
    assert not any("exited" in r and "target" in r for r in reasons.values()), reasons
    assert "interrupted" in stdout and (out / "report.html").is_file()


def test_every_documented_code_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in ExitCode:
        assert f"| {int(code)} |" in table, code
