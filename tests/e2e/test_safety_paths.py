"""Root never writes through a path another user controls (issue 17, findings 1 and 2).

diagnose runs as root; the attacker is a local user (``nobody`` here) who owns the
directory root writes into (``--out /tmp/o`` made world-writable, root's working
directory, the directory of a bundle they handed over). The races of the review are made
deterministic: the attacker acts at the worst moment by way of hooks into diagnose (right
after the bundle directory is created, right before each helper process starts, between
two reports), and plants a link at every member path. Each test failed on 8e0de8b.

Victims are root-only files and directories that must come out unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from diagnose.app.report import write_reports
from diagnose.bundle import writer as writer_module
from diagnose.bundle.reader import Bundle
from diagnose.cli import main
from diagnose.collect import child as child_module
from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import capture
from tests.conftest import FIXTURES, is_root
from tests.e2e.cli import run_cli

pytestmark = pytest.mark.skipif(not is_root(), reason="needs root (to chown to nobody)")

NOBODY = 65534
SERVICE = """
import sys, threading, time
def handle():
    while True:
        sum(i * i for i in range(3000))
for i in range(2):
    threading.Thread(target=handle, name=f"handler-{i}", daemon=True).start()
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
"""

#: every path a capture and its reports write, and the temporary names next to them
MEMBERS = sorted(
    {
        *(p.relative_to(FIXTURES / "bundles" / "lock_contention").as_posix()
          for p in (FIXTURES / "bundles" / "lock_contention").rglob("*") if p.is_file()),
        "manifest.json", "system.json", ".reserve", "report.html", "report.md", "report.json",
        "proc/threads.csv", "proc/process.csv", "proc/cpus.csv", "proc/host.csv",
        *(f"python/{n}" for n in (
            "trace-000.json", "trace-000.stderr", "trace-001.json", "trace-001.stderr",
            "gil-000.folded", "gil-000.stderr", "gil-001.folded", "gil-001.stderr",
            "intervals.csv", "stacks.csv", "threads.csv", "stacks.folded",
            "python.speedscope.json", "gil.folded", "gil.json", "calls.json")),
        *(f"{d}/{n}" for d in ("native", "sched", "c2c") for n in (
            ".perf.data", ".perf.data.old", "perf-record.stderr", "perf-script.stderr")),
        *(f"native/{n}" for n in (
            "samples.csv", "stacks.csv", "stacks.folded", "native.speedscope.json",
            "perf-stat.csv")),
        *(f"sched/{n}" for n in ("offcpu.csv", "futex.csv", "stacks.csv", "offcpu.folded")),
        *(f"c2c/{n}" for n in ("report.txt", "lines.json")),
    }
)  # fmt: skip
PLANTED = sorted({*MEMBERS, *(str(Path(m).with_name(f".{Path(m).name}.tmp")) for m in MEMBERS)})


def chown_tree(path: Path, uid: int = NOBODY) -> None:
    os.lchown(path, uid, uid)
    if path.is_dir() and not path.is_symlink():
        for p in path.rglob("*"):
            os.lchown(p, uid, uid)


def attacker_dir(path: Path, mode: int = 0o777) -> Path:
    path.mkdir(parents=True)
    path.chmod(mode)
    os.chown(path, NOBODY, NOBODY)
    return path


class Victims:
    """Root-only files (one per member path) in a root-only directory: links point here."""

    def __init__(self, base: Path) -> None:
        self.dir = base / "root-only"
        self.dir.mkdir(mode=0o700)
        self.files: dict[str, Path] = {}
        for i, rel in enumerate(PLANTED):
            p = self.dir / f"victim-{i:03d}"
            p.write_text(f"precious {rel}\n")
            p.chmod(0o600)
            self.files[rel] = p

    def assert_untouched(self) -> None:
        changed = [
            rel
            for rel, p in self.files.items()
            if p.read_text() != f"precious {rel}\n" or stat.S_IMODE(p.stat().st_mode) != 0o600
        ]
        assert not changed, f"root wrote through planted links: {changed[:8]}"
        assert sorted(self.dir.iterdir()) == sorted(self.files.values())


_PLANTING = threading.Lock()  # helpers start from several threads: one planter at a time


def plant(root: Path, victims: Victims, files: bool = True) -> None:
    """The attacker's directory gets every member directory and, with ``files``, a link at
    every member path (and every temporary name) to a victim; all owned by nobody."""
    with _PLANTING:
        _plant(root, victims, files)


def _plant(root: Path, victims: Victims, files: bool) -> None:
    for rel in PLANTED:
        p = root / rel
        if not p.parent.exists():
            p.parent.mkdir(parents=True)
            p.parent.chmod(0o777)
            os.chown(p.parent, NOBODY, NOBODY)
        if files and not p.is_symlink():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()  # a file diagnose wrote there (8e0de8b did)
            with contextlib.suppress(FileExistsError):  # diagnose made it meanwhile
                p.symlink_to(victims.files[rel])
                os.lchown(p, NOBODY, NOBODY)


@pytest.fixture
def service() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVICE, "60"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("diagnose: error: "), res.stderr
    return lines[0]


# -- finding 1: --out -------------------------------------------------------------------------


def test_an_out_directory_another_user_owns_is_refused(tmp_path, service):
    # GIVEN /tmp/o made by nobody, empty and world-writable (the review's setup)
    out = attacker_dir(tmp_path / "o")
    res = run_cli("attach", str(service.pid), "-d", "2", "-o", str(out))
    # THEN exit 6 with one line saying why, and nothing written into it
    assert res.returncode == 6, res.stderr
    assert "belongs to uid 65534" in one_line_error(res)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("case", ["mode 0775", "not empty", "a symlink"])
def test_an_out_directory_that_is_not_private_and_empty_is_refused(tmp_path, service, case):
    # GIVEN root's own directory, but writable by others, holding a planted link, or a link
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    out = real
    if case == "mode 0775":
        real.chmod(0o775)
    elif case == "not empty":
        (real / "manifest.json").symlink_to(tmp_path / "victim")
    else:
        out = tmp_path / "link"
        out.symlink_to(real)
    before = stat.S_IMODE(real.stat().st_mode)
    res = run_cli("attach", str(service.pid), "-d", "2", "-o", str(out))
    # THEN refused in one line (exit 6), the directory left as it was (not chmod-ed)
    assert res.returncode == 6, res.stderr
    one_line_error(res)
    assert stat.S_IMODE(real.stat().st_mode) == before
    assert not (tmp_path / "victim").exists()
    assert [p.name for p in real.iterdir()] == (["manifest.json"] if case == "not empty" else [])


def test_an_empty_private_out_directory_is_used(tmp_path, service):
    # GIVEN an empty directory root owns with mode 0700 (the one kind accepted)
    out = tmp_path / "mine"
    out.mkdir(mode=0o700)
    res = run_cli("attach", str(service.pid), "-d", "2", "-o", str(out), "--format", "json")
    assert res.returncode in (0, 5), res.stderr
    assert json.loads((out / "manifest.json").read_text())["state"] == "complete"


def test_an_empty_out_directory_only_root_may_write_is_used(tmp_path, service):
    # GIVEN a plain mkdir of root's: empty, 0755 (others may read, not write)
    out = tmp_path / "plain"
    out.mkdir()
    out.chmod(0o755)
    res = run_cli("attach", str(service.pid), "-d", "2", "-o", str(out), "--format", "json")
    # THEN the bundle is written there, and the directory is made 0700 like a new one
    assert res.returncode in (0, 5), res.stderr
    assert json.loads((out / "manifest.json").read_text())["state"] == "complete"
    assert stat.S_IMODE(out.stat().st_mode) == 0o700


def test_the_default_bundle_name_cannot_be_planted(tmp_path, service):
    # GIVEN root's working directory is writable by nobody, who planted every name the
    # default bundle could get in the next minute: links to an empty root-only directory
    # (8e0de8b followed them, chmod-ed the target and wrote the bundle there) and
    # directories of their own (where they could read the bundle)
    cwd = attacker_dir(tmp_path / "app")
    victim = tmp_path / "root-only-empty"
    victim.mkdir(mode=0o711)
    now = datetime.now()
    planted = []
    for s in range(-2, 90):
        name = f"diagnose-{service.pid}-{(now + timedelta(seconds=s)):%Y%m%d-%H%M%S}"
        p = cwd / name
        if s % 2:
            p.symlink_to(victim)
            os.lchown(p, NOBODY, NOBODY)
        else:
            attacker_dir(p)
        planted.append(p)
    res = run_cli("attach", str(service.pid), "-d", "2", "--format", "json", cwd=cwd)
    # THEN none of them was used: a new directory of root's, 0700, holds the bundle
    assert list(victim.iterdir()) == [] and stat.S_IMODE(victim.stat().st_mode) == 0o711
    for p in planted:
        if p.is_symlink():
            assert os.readlink(p) == str(victim)
        else:
            assert list(p.iterdir()) == [] and stat.S_IMODE(p.stat().st_mode) == 0o777
    assert res.returncode in (0, 5), res.stderr
    made = [p for p in cwd.iterdir() if p not in planted]
    assert len(made) == 1, made
    st = made[0].lstat()
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700
    assert made[0].name.startswith(f"diagnose-{service.pid}-")
    assert (made[0] / "manifest.json").is_file()


def test_helpers_never_write_through_links_planted_at_every_member_path(
    tmp_path, service, monkeypatch
):
    # GIVEN --out /tmp/o/b where /tmp/o belongs to nobody: right after diagnose creates b,
    # nobody moves it away and puts a directory of their own in its place; and each time
    # diagnose starts a helper (py-spy, perf: after any check diagnose could make before
    # it), nobody plants a link at every member path, to root-only files
    victims = Victims(tmp_path)
    o = attacker_dir(tmp_path / "o")
    out = o / "b"
    created = writer_module.BundleWriter.create.__func__  # type: ignore[attr-defined]

    def create_then_swap(cls, root, *args, **kwargs):
        w = created(cls, root, *args, **kwargs)
        os.rename(out, o / "b.real")
        attacker_dir(out)
        plant(out, victims, files=False)
        return w

    monkeypatch.setattr(writer_module.BundleWriter, "create", classmethod(create_then_swap))
    real_init = child_module.Child.__init__

    def plant_then_start(self, *args, **kwargs):
        plant(out, victims)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(child_module.Child, "__init__", plant_then_start)
    # WHEN root captures the service and writes its reports
    try:
        result = capture(service.pid, out, CaptureOptions(duration=6))
        write_reports(result.writer.dir.dup())
    finally:
        monkeypatch.undo()
        # THEN no root-only file changed (checked first, whatever else happened)
        victims.assert_untouched()
    # nothing was written into nobody's directory
    for p in out.rglob("*"):
        assert p.is_dir() or (p.is_symlink() and p.lstat().st_uid == NOBODY), p
    # and the bundle is whole in the directory diagnose created
    real = o / "b.real"
    b = Bundle.open(real)
    assert b.manifest.state == "complete"
    assert b.usable("proc") and b.usable("pyspy"), b.manifest.collectors
    assert (real / "report.json").is_file() and (real / "report.html").stat().st_size > 0
    # the planted paths cover everything the capture wrote
    written = {p.relative_to(real).as_posix() for p in real.rglob("*") if p.is_file()}
    assert written <= set(PLANTED), written - set(PLANTED)


# -- finding 2: report and compare ------------------------------------------------------------


def foreign_bundle(tmp_path: Path) -> tuple[Path, Path]:
    """A bundle nobody handed over, in a directory of theirs: (bundle, a root-only directory
    holding a report.html that must not change)."""
    o = attacker_dir(tmp_path / "o")
    b = o / "b"
    subprocess.run(["cp", "-r", str(FIXTURES / "bundles" / "lock_contention"), str(b)], check=True)
    chown_tree(b)
    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    (secret / "report.html").write_text("precious\n")
    (secret / "compare.html").write_text("precious\n")
    return b, secret


def swap_for_link(bundle: Path, target: Path) -> None:
    """What the bundle's owner does between two reports."""
    os.rename(bundle, bundle.with_name("b.real"))
    bundle.symlink_to(target)


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_bundle_swapped_for_a_link_mid_report_is_not_followed(tmp_path, monkeypatch, command):
    # GIVEN root renders nobody's bundle, and nobody swaps it for a link to a root-only
    # directory right after the Markdown report (before the HTML one)
    bundle, secret = foreign_bundle(tmp_path)
    if command == "report":
        from diagnose.render import markdown as module

        name = "render_markdown"
    else:
        from diagnose.render import compare as module

        name = "render_compare_markdown"
    render = getattr(module, name)

    def render_then_swap(*args, **kwargs):
        text = render(*args, **kwargs)
        if not bundle.is_symlink():
            swap_for_link(bundle, secret)
        return text

    monkeypatch.setattr(module, name, render_then_swap)
    args = (
        ["report", str(bundle), "-q"]
        if command == "report"
        else ["compare", str(bundle), str(bundle)]
    )
    res = CliRunner().invoke(main, args)
    monkeypatch.undo()
    assert bundle.is_symlink(), "the swap did not happen"
    # THEN nothing was written into the root-only directory; the reports are in the bundle
    # that was opened
    assert sorted(p.name for p in secret.iterdir()) == ["compare.html", "report.html"]
    assert (secret / "report.html").read_text() == "precious\n"
    assert (secret / "compare.html").read_text() == "precious\n"
    assert res.exit_code == 0, res.output
    stem = "report" if command == "report" else "compare"
    real = bundle.with_name("b.real")
    assert (real / f"{stem}.html").stat().st_size > 0 and (real / f"{stem}.md").is_file()
