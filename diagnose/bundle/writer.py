"""Writing a bundle: private permissions, atomic JSON, streamed tables, a disk budget.

Every file is created readable by its owner only (0600, directories 0700): a bundle holds
stacks, paths and command lines of a production service. JSON documents are written to a
temporary name and renamed, so a reader never sees half of one; tables are streamed and
flushed, so a capture that is cut short keeps every complete row.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import shutil
from pathlib import Path
from typing import IO, Any

from diagnose.bundle.manifest import Manifest
from diagnose.errors import OutputError

FILE_MODE = 0o600
DIR_MODE = 0o700
RESERVE = ".reserve"  # disk set aside during a capture, to finish the bundle on a full disk


def _output_error(path: Path, exc: OSError) -> OutputError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return OutputError(
            f"disk full while writing {path}: free some space or use --out elsewhere"
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return OutputError(f"cannot write to {path}: {exc.strerror}; choose a writable --out")
    return OutputError(f"cannot write {path}: {exc.strerror or exc}")


def _open_private_tmp(path: Path) -> tuple[Path, int]:
    """Create ``.NAME.tmp`` next to ``path`` afresh, 0600: a file or symlink already there
    (a bundle received from someone else may hold one) is replaced, never written through."""
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return tmp, os.open(tmp, flags, FILE_MODE)


def _write_atomic(path: Path, write: Any) -> None:
    """Write through ``write(fh)`` so that ``path`` is either old or complete."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp, fd = _open_private_tmp(path)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # ENOTDIR, EROFS...: nothing was written
            tmp.unlink()
        raise _output_error(path, exc) from exc


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` so that ``path`` is either old or complete."""

    def write(fh: IO[str]) -> None:
        json.dump(obj, fh, indent=1, ensure_ascii=False, allow_nan=False, default=str)
        fh.write("\n")

    _write_atomic(path, write)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) so that ``path`` is either old or complete."""
    _write_atomic(path, lambda fh: fh.write(text))


class BundleWriter:
    """A bundle directory being written. Collectors ask it for paths and file handles."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def create(cls, root: Path) -> BundleWriter:
        """Create an empty bundle directory; refuse to mix with an existing bundle."""
        root = Path(root)
        if root.exists():
            if not root.is_dir():
                raise OutputError(f"--out {root} exists and is not a directory")
            if any(root.iterdir()):
                raise OutputError(f"--out {root} exists and is not empty; choose a new directory")
        parent = root.parent if str(root.parent) else Path(".")
        if parent.exists() and not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(
                f"cannot create {root}: {parent} is not writable; choose another --out"
            )
        try:
            root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            os.chmod(root, DIR_MODE)
        except OSError as exc:
            raise _output_error(root, exc) from exc
        return cls(root)

    def path(self, rel: str) -> Path:
        """Path of bundle member ``rel`` (``proc/threads.csv``); its directory is created."""
        p = self.root / rel
        if not p.resolve().is_relative_to(self.root.resolve()):
            raise ValueError(f"bundle member {rel!r} escapes the bundle")
        self._mkdir(p.parent)
        return p

    def _mkdir(self, directory: Path) -> None:
        try:
            directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            raise _output_error(directory, exc) from exc

    def open_text(self, rel: str, mode: str = "w") -> IO[str]:
        """Open a text member for streaming, created 0600."""
        p = self.path(rel)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
        try:
            fd = os.open(p, flags, FILE_MODE)
        except OSError as exc:
            raise _output_error(p, exc) from exc
        return os.fdopen(fd, mode, encoding="utf-8", newline="")

    def open_rows(self, rel: str, header: list[str]) -> RowFile:
        """A CSV member written in whole rows only (see :class:`RowFile`)."""
        p = self.path(rel)
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
        except OSError as exc:
            raise _output_error(p, exc) from exc
        rows = RowFile(fd, p)
        rows.writerow(header)
        rows.commit()
        return rows

    def write_json(self, rel: str, obj: Any) -> Path:
        p = self.path(rel)
        write_json_atomic(p, obj)
        return p

    def write_text(self, rel: str, text: str) -> Path:
        p = self.path(rel)
        write_text_atomic(p, text)
        return p

    def write_manifest(self, manifest: Manifest) -> None:
        self.write_json("manifest.json", manifest.to_dict())

    def reserve(self, nbytes: int) -> None:
        """Set ``nbytes`` of disk aside (``.reserve``) so that a capture that fills the disk
        can still finish its bundle: :meth:`release_reserve` frees it once recording ends."""
        path = self.root / RESERVE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, nbytes)
        except OSError:  # no room even for that, or no fallocate here: go on without
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)

    def release_reserve(self) -> None:
        with contextlib.suppress(OSError):
            (self.root / RESERVE).unlink()

    def size_bytes(self) -> int:
        total = 0
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                if name == RESERVE and dirpath == str(self.root):
                    continue
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
        return total

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.root).free


class RowFile:
    """A CSV file that only ever holds whole rows.

    Rows are gathered in memory and written with one ``commit`` per tick; when a write fails
    half-way (the disk filled up), the file is cut back to the last whole row before the
    error is raised. So a capture ended by a full disk leaves every table readable to its
    last complete tick, never with a torn line.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path
        self.size = 0
        self._buf = io.StringIO()
        self._csv = csv.writer(self._buf)

    def writerow(self, row: Any) -> None:
        self._csv.writerow(row)

    def commit(self) -> None:
        data = self._buf.getvalue().encode("utf-8")
        self._buf.seek(0)
        self._buf.truncate()
        if not data:
            return
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
                os.lseek(self.fd, self.size, os.SEEK_SET)
            raise _output_error(self.path, exc) from exc
        self.size += len(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def __enter__(self) -> RowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
