"""The poll() diagnose preloads into perf (diagnose/collect/perf/pollfix.py), called directly:
entries set aside with events = 0 report nothing, whatever the kernel says of them."""

from __future__ import annotations

import ctypes
import errno
import os
import select
import stat
import tempfile
from pathlib import Path

import pytest

from diagnose.collect.perf import pollfix


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory, monkeypatch):
    """Each test builds with a cache of its own (empty), not the user's ~/.cache/diagnose."""
    home = tmp_path_factory.mktemp("cache-home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "diagnose"


class PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


@pytest.fixture(scope="module")
def fixed_poll():
    lib = pollfix.preload(timeout=30)
    if lib is None:
        pytest.skip(f"no poll() fix here: {pollfix.why_not()}")
    poll = ctypes.CDLL(lib).poll
    poll.argtypes = [ctypes.POINTER(PollFd), ctypes.c_ulong, ctypes.c_int]
    poll.restype = ctypes.c_int
    return poll


def hung_up() -> int:
    """A descriptor the kernel reports POLLHUP for (a pipe whose writer is closed)."""
    r, w = os.pipe()
    os.close(w)
    return r


def readable() -> int:
    r, w = os.pipe()
    os.write(w, b"x")
    return r


def test_an_entry_set_aside_reports_nothing_and_does_not_wake_poll(fixed_poll):
    fds = (PollFd * 2)(PollFd(hung_up(), 0, 0), PollFd(hung_up(), 0, 0))
    # the kernel's poll() returns at once for such entries (perf's busy loop) ...
    assert fixed_poll(fds, 2, 50) == 0  # ... this one waits out its timeout: nothing ready
    assert [f.revents for f in fds] == [0, 0]


def test_the_other_entries_are_polled_as_usual(fixed_poll):
    hup, ready, idle_r = hung_up(), readable(), os.pipe()[0]
    fds = (PollFd * 4)(
        PollFd(hup, 0, 0),  # set aside
        PollFd(ready, select.POLLIN, 0),
        PollFd(hung_up(), select.POLLIN, 0),  # asked for: its POLLHUP is reported
        PollFd(idle_r, select.POLLIN, 0),
    )
    assert fixed_poll(fds, 4, 1000) == 2
    assert fds[0].revents == 0
    assert fds[1].revents & select.POLLIN
    assert fds[2].revents & select.POLLHUP
    assert fds[3].revents == 0


def test_more_entries_than_the_stack_holds(fixed_poll):
    n = 150  # over the 64 the library keeps on the stack: the heap path
    fds = (PollFd * n)(*[PollFd(hung_up(), 0 if i % 3 else select.POLLIN, 0) for i in range(n)])
    asked = sum(1 for i in range(n) if i % 3 == 0)
    assert fixed_poll(fds, n, 0) == asked
    for i, f in enumerate(fds):
        assert bool(f.revents & select.POLLHUP) == (i % 3 == 0), i


def test_perf_gets_the_library_before_any_preload_already_set(monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/opt/other.so")
    assert pollfix.environment("/x/pollfix.so")["LD_PRELOAD"] == "/x/pollfix.so /opt/other.so"
    monkeypatch.delenv("LD_PRELOAD")
    assert pollfix.environment("/x/pollfix.so")["LD_PRELOAD"] == "/x/pollfix.so"


def test_no_compiler_means_no_library_and_says_why(monkeypatch):
    monkeypatch.setattr(pollfix.shutil, "which", lambda name: None)
    build = pollfix._Build()
    assert build.wait(5) is None
    assert "no C compiler" in build.why_not


def test_the_library_perf_loads_cannot_be_swapped_through_a_shared_tmpdir(tmp_path, monkeypatch):
    # GIVEN a $TMPDIR every user may write into (sudo -E keeps a user's)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    build = pollfix._Build()
    lib = build.wait(30)
    if lib is None:
        pytest.skip(f"no poll() fix here: {build.why_not}")
    assert build.work is not None
    # THEN it is built in a directory of ours only, reached through its descriptor
    assert lib.startswith(f"/proc/self/fd/{build.work.fd}/")
    st = os.fstat(build.work.fd)
    assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
    real = Path(lib).read_bytes()
    assert real[:4] == b"\x7fELF"
    # WHEN another user moves that directory aside and plants their own library in its place
    (built,) = [p for p in shared.iterdir() if p.name.startswith("diagnose-pollfix")]
    built.rename(shared / "aside")
    built.mkdir()
    (built / "pollfix.so").write_bytes(b"planted")
    # THEN the path perf is given still reaches the library diagnose built
    assert Path(lib).read_bytes() == real
    assert pollfix.environment(lib)["LD_PRELOAD"].startswith(lib)


# -- /proc/kallsyms from diagnose's snapshot -------------------------------------------------


def test_the_library_opens_the_snapshot_for_proc_kallsyms_only(tmp_path, monkeypatch):
    lib = pollfix.preload(timeout=30)
    if lib is None:
        pytest.skip(f"no library here: {pollfix.why_not()}")
    c = ctypes.CDLL(lib)
    snap = tmp_path / "snap"
    snap.write_bytes(b"ffffffff81000000 T _text\n")
    other = tmp_path / "other"
    other.write_bytes(b"other\n")

    def read_via(fn: str, path: str) -> bytes:
        if fn.startswith("fopen"):
            f = getattr(c, fn)
            f.restype = ctypes.c_void_p
            fh = f(path.encode(), b"r")
            assert fh, (fn, path)
            buf = ctypes.create_string_buffer(64)
            c.fgets.restype = ctypes.c_char_p
            line = c.fgets(buf, 64, ctypes.c_void_p(fh))
            c.fclose(ctypes.c_void_p(fh))
            return bytes(line)
        if fn.startswith("openat"):
            fd = getattr(c, fn)(-100, path.encode(), os.O_RDONLY)  # AT_FDCWD
        else:
            fd = getattr(c, fn)(path.encode(), os.O_RDONLY)
        assert fd >= 0, (fn, path)
        try:
            return os.read(fd, 64).split(b"\n")[0] + b"\n"
        finally:
            os.close(fd)

    monkeypatch.setenv(pollfix.KALLSYMS_ENV, str(snap))
    for fn in (
        "open",
        "open64",
        "openat",
        "openat64",
        "__open_2",
        "__open64_2",
        "fopen",
        "fopen64",
    ):
        assert read_via(fn, "/proc/kallsyms") == b"ffffffff81000000 T _text\n", fn
        assert read_via(fn, str(other)) == b"other\n", fn  # any other path is left alone
    # without a snapshot to read, the kernel's own table
    monkeypatch.delenv(pollfix.KALLSYMS_ENV)
    assert read_via("open64", "/proc/kallsyms") != b"ffffffff81000000 T _text\n"


def built_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[pollfix._Build, str]:
    """A build of the library of its own, in ``tmp_path`` (skips where none can be built)."""
    tmp_path.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    build = pollfix._Build()
    lib = build.wait(30)
    if lib is None:
        pytest.skip(f"no library here: {build.why_not}")
    return build, lib


def test_the_snapshot_is_the_kernels_table_in_diagnoses_private_directory(tmp_path, monkeypatch):
    build, lib = built_in(tmp_path, monkeypatch)
    assert build.work is not None and build.kallsyms is not None
    assert build.kallsyms == f"/proc/self/fd/{build.work.fd}/kallsyms"
    with open("/proc/kallsyms", "rb") as fh:
        first = fh.readline()
    assert Path(build.kallsyms).read_bytes().startswith(first)
    # perf is told where it is (the module's own build, here: a second one is not used)
    monkeypatch.setattr(pollfix, "_BUILD", build)
    assert pollfix.environment(lib)[pollfix.KALLSYMS_ENV] == build.kallsyms
    assert pollfix.kallsyms() == build.kallsyms
    pollfix._remove(build.work)


def test_the_status_of_a_thread_that_exited_is_served_as_an_exited_thread_of_the_target(
    monkeypatch,
):
    lib = pollfix.preload(timeout=30)
    if lib is None:
        pytest.skip(f"no library here: {pollfix.why_not()}")
    c = ctypes.CDLL(lib, use_errno=True)
    monkeypatch.setenv(pollfix.TARGET_ENV, "4242")
    gone = f"/proc/{2**22 + 12345}"  # above pid_max: never a live thread
    for path in (f"{gone}/status", f"{gone}/task/{2**22 + 12346}/status"):
        fd = c.open64(path.encode(), os.O_RDONLY)
        assert fd >= 0, path
        try:
            text = os.read(fd, 256).decode()
        finally:
            os.close(fd)
        assert "Tgid:\t4242\n" in text and text.startswith("Name:\t(exited)\n"), text
    # any other file of a gone thread still fails as it did, with its errno
    assert c.open64(f"{gone}/maps".encode(), os.O_RDONLY) == -1
    assert ctypes.get_errno() == errno.ENOENT
    # a live thread's status is its own
    fd = c.open64(f"/proc/{os.getpid()}/status".encode(), os.O_RDONLY)
    try:
        assert f"Tgid:\t{os.getpid()}\n" in os.read(fd, 4096).decode()
    finally:
        os.close(fd)


# -- the library handed down to a worker's capture ---------------------------------------------


def test_a_workers_capture_uses_the_library_its_parent_built(tmp_path, monkeypatch):
    # GIVEN a library built by one diagnose (the service's capture)
    parent, lib = built_in(tmp_path, monkeypatch)
    assert parent.work is not None
    # WHEN another (a worker's capture) is handed its directory's descriptor
    child = pollfix._Build()
    assert child.adopt(parent.work.fd)
    # THEN it uses that library and snapshot, through the same descriptor, and builds none
    assert child.wait(5) == lib
    assert child.adopted and child.thread is None and child.kallsyms == parent.kallsyms
    assert Path(child.path or "").read_bytes()[:4] == b"\x7fELF"
    (only,) = tmp_path.iterdir()  # one directory: the parent's
    assert only.stat().st_ino == os.fstat(parent.work.fd).st_ino
    # and a second hand-down is refused (it has one)
    assert not child.adopt(parent.work.fd)
    pollfix._remove(parent.work)


@pytest.mark.parametrize("why", ["others can enter it", "another user owns it", "no library"])
def test_a_directory_that_is_not_ours_alone_is_never_used_for_perfs_library(tmp_path, why):
    # GIVEN a directory handed down as perf's library's, which is not a private one of ours
    d = tmp_path / "lib"
    d.mkdir(mode=0o700)
    d.chmod(0o700)
    if why != "no library":
        (d / "pollfix.so").write_bytes(b"\x7fELF planted")
    if why == "others can enter it":
        d.chmod(0o755)
    elif why == "another user owns it":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the directory away")
        os.chown(d, 65534, 65534)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # WHEN a capture is told to use it
        build = pollfix._Build()
        # THEN it refuses, and would build its own library instead
        assert not build.adopt(fd)
        assert build.path is None and build.work is None
    finally:
        os.close(fd)


def test_a_workers_capture_is_handed_the_librarys_directory():
    from diagnose.collect.base import CaptureOptions
    from diagnose.collect.workers import child_argv

    argv = child_argv(42, "/proc/self/fd/7/42", CaptureOptions(duration=5), (41,), 9)
    i = argv.index("--pollfix-fd")
    assert argv[i + 1] == "9"
    assert "--pollfix-fd" not in child_argv(42, "/proc/self/fd/7/42", CaptureOptions(duration=5))


# -- the cache: built once, copied after ---------------------------------------------------


def test_a_library_built_once_is_copied_from_the_cache_the_next_time(
    tmp_path, monkeypatch, own_cache
):
    # GIVEN a capture that built the library (the cache was empty)
    first, lib = built_in(tmp_path, monkeypatch)
    assert not first.cached
    (kept,) = own_cache.iterdir()
    st = kept.stat()
    assert kept.name == pollfix._cached_name() and st.st_uid == os.geteuid()
    assert stat.S_IMODE(own_cache.stat().st_mode) == 0o700
    # WHEN the next capture starts, on a host without a compiler now
    monkeypatch.setattr(pollfix.shutil, "which", lambda name: None)
    second = pollfix._Build()
    again = second.wait(30)
    # THEN it uses the cached library, copied into its own directory, and compiles nothing
    assert again is not None and second.cached and second.work is not None
    assert again.startswith(f"/proc/self/fd/{second.work.fd}/")
    assert Path(again).read_bytes() == Path(lib).read_bytes() == kept.read_bytes()
    assert not second.work.is_file("pollfix.c")
    assert second.kallsyms is not None  # its own snapshot of the kernel's symbols
    pollfix._remove(first.work)
    pollfix._remove(second.work)


def planted(cache: Path, data: bytes = b"\x7fELF planted") -> Path:
    cache.mkdir(mode=0o700, exist_ok=True)
    path = cache / pollfix._cached_name()
    path.write_bytes(data)
    return path


def built_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture starting now builds its library: nothing of the planted file in it."""
    build, lib = built_in(tmp_path / "tmp", monkeypatch)
    assert not build.cached and b"planted" not in Path(lib).read_bytes()
    pollfix._remove(build.work)


def spoiled(path: Path, how: str, elsewhere: Path) -> Path:
    """Make ``path`` (the cached file or the cache directory) not ours alone, ``how``; the
    path its content is now at."""
    if how == "open to others":
        path.chmod(0o755 if path.is_dir() else 0o666)  # (a directory: others may enter)
    elif how == "another user owns it":
        os.chown(path, 65534, 65534)
    elif how == "two links":
        os.link(path, elsewhere / "elsewhere")
    else:  # a symbolic link
        path.rename(elsewhere / "real")
        path.symlink_to(elsewhere / "real")
        return elsewhere / "real"
    return path


@pytest.mark.parametrize(
    "how", ["open to others", "another user owns it", "two links", "a symbolic link"]
)
def test_a_cached_file_that_is_not_ours_alone_is_never_loaded(
    tmp_path, monkeypatch, own_cache, how
):
    # GIVEN a file under the cached library's name that diagnose did not leave there as is
    spoiled(planted(own_cache), how, tmp_path)
    # WHEN a capture starts THEN it builds its own library and loads nothing of that file
    built_anew(tmp_path, monkeypatch)


@pytest.mark.parametrize("how", ["open to others", "another user owns it", "a symbolic link"])
def test_a_cache_directory_that_is_not_ours_alone_is_left_alone(
    tmp_path, monkeypatch, own_cache, how
):
    # GIVEN a cache directory holding what looks like the library
    name = planted(own_cache).name
    path = spoiled(own_cache, how, tmp_path) / name
    before = path.read_bytes()
    # WHEN a capture starts THEN it neither reads from it nor writes into it
    built_anew(tmp_path, monkeypatch)
    assert path.read_bytes() == before and len(list(path.parent.iterdir())) == 1


def test_the_cached_name_changes_with_the_source_and_the_flags(monkeypatch):
    name = pollfix._cached_name()
    assert name.startswith("pollfix-") and name.endswith(".so")
    with monkeypatch.context() as m:
        m.setattr(pollfix, "SOURCE", pollfix.SOURCE + "\n/* changed */\n")
        assert pollfix._cached_name() != name
    with monkeypatch.context() as m:
        m.setattr(pollfix, "CFLAGS", ("-O0", "-shared", "-fPIC"))
        assert pollfix._cached_name() != name
    assert pollfix._cached_name() == name  # the same inputs, the same name
