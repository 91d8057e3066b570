"""The false-sharing collector reads code and source lines from the files a target maps
(collect/mapped.py). The target controls those paths: a FIFO put in a library's place must
not hang diagnose, a link to a file only root may read must not copy its bytes into the
bundle, and the library itself is still read while the process lives. Each case runs
against a real child process that maps a private copy of a real library."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect import session
from diagnose.collect.mapped import open_mapped
from diagnose.collect.perf.codebytes import CodeReader, MapEntry, read_maps

LIB = Path("/usr/lib/x86_64-linux-gnu/libz.so.1")
SECRET = b"root-only secret bytes\n" * 64


@pytest.fixture
def target(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A process that maps its own copy of libz, until its stdin closes."""
    if not LIB.is_file():
        pytest.skip(f"no {LIB} to map")
    lib = tmp_path / "libmodel.so"
    shutil.copy(LIB, lib)
    code = (
        "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(lib)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc, lib
    proc.kill()
    proc.wait()


def lib_mapping(pid: int, lib: Path) -> MapEntry:
    return next(m for m in read_maps(pid) if m.path == str(lib))


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``'s result, failing the test (not hanging it) when it takes longer."""
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert box, f"still running after {seconds} s (blocked in open()?)"
    return box[0]


def exit_and_replace(
    proc: subprocess.Popen[str], lib: Path, replace: Callable[[Path], None]
) -> None:
    proc.kill()
    proc.wait()
    lib.unlink()
    replace(lib)


def test_the_file_mapped_is_read_while_the_path_now_names_a_fifo(target):
    proc, lib = target
    m = lib_mapping(proc.pid, lib)
    original = lib.read_bytes()
    lib.unlink()
    os.mkfifo(lib)
    fd = within(5, lambda: open_mapped(proc.pid, m.start, m.end, m.path, m.dev, m.inode))
    try:
        assert os.pread(fd, 64, m.offset) == original[m.offset : m.offset + 64]
    finally:
        os.close(fd)


def test_a_fifo_in_an_exited_targets_library_path_does_not_hang(target):
    proc, lib = target
    m = lib_mapping(proc.pid, lib)
    exit_and_replace(proc, lib, os.mkfifo)
    reader = CodeReader(proc.pid, [m])  # the process is gone: the file would be read
    got = within(5, lambda: reader.read(m.start, m.start + 32))
    reader.close()
    assert isinstance(got, str) and "no longer the file" in got


def test_a_link_to_a_root_only_file_gives_no_bytes(target, tmp_path):
    proc, lib = target
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    os.chmod(secret, 0o600)
    m = lib_mapping(proc.pid, lib)
    exit_and_replace(proc, lib, lambda p: p.symlink_to(secret))
    reader = CodeReader(proc.pid, [m])
    got = reader.read(m.start, m.start + 32)
    reader.close()
    assert isinstance(got, str), "bytes were read through the link"


def test_another_file_at_the_path_gives_no_bytes(target):
    # GIVEN the target exits and its library's path now holds another (regular) file
    proc, lib = target
    m = lib_mapping(proc.pid, lib)
    proc.kill()
    proc.wait()
    lib.rename(lib.with_name("kept"))  # (kept: a freed inode number may be given out again)
    lib.write_bytes(SECRET)
    # THEN its inode is not the one mapped: nothing is read from it
    with pytest.raises(OSError, match="no longer the file"):
        open_mapped(proc.pid, m.start, m.end, m.path, m.dev, m.inode)


def test_the_unchanged_file_of_an_exited_target_is_still_read(target):
    proc, lib = target
    m = lib_mapping(proc.pid, lib)
    proc.kill()
    proc.wait()
    reader = CodeReader(proc.pid, [m])
    got = reader.read(m.start, m.start + 32)
    reader.close()
    assert not isinstance(got, str) and got[1] == "file"
    assert got[0] == lib.read_bytes()[m.offset : m.offset + 32]


# --- a collector's finish that never returns ---------------------------------------------


class Stuck:
    """A collector whose conversion blocks until released."""

    name = "stuck"

    def __init__(self) -> None:
        self.release = threading.Event()

    def finish(self, ctx: object, timeout: float) -> CollectorRecord:
        self.release.wait()
        return CollectorRecord(self.name, CollectorStatus.OK, "")


class Quick(Stuck):
    name = "quick"

    def finish(self, ctx: object, timeout: float) -> CollectorRecord:
        return CollectorRecord(self.name, CollectorStatus.OK, "")


def test_a_collector_past_the_finish_deadline_is_abandoned_and_marked_failed():
    stuck, quick = Stuck(), Quick()
    records: dict[str, CollectorRecord] = {}
    t0 = time.monotonic()
    room = session._finish_collectors(None, [stuck, quick], records, deadline_s=0.5)  # type: ignore[arg-type, list-item]
    stuck.release.set()
    assert time.monotonic() - t0 < 5 and room
    assert records["quick"].status == CollectorStatus.OK
    assert records["stuck"].status == CollectorStatus.FAILED
    assert "abandoned" in records["stuck"].reason
