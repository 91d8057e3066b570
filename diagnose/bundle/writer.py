"""Writing a bundle: a private directory held by descriptor, atomic JSON, streamed tables, a
disk budget.

The bundle directory is created by :class:`~diagnose.bundle.safedir.SafeDir` (new and 0700,
or an existing empty one the caller owns and no one else may write, made 0700) and held open: every member is
reached from that descriptor, never by re-walking a path someone else could change (see
``safedir.py``). Every file is created readable by its owner only (0600, directories
0700): a bundle holds stacks, paths and command lines of a production service. JSON
documents are written to a temporary name and renamed, so a reader never sees half of one;
tables are streamed and flushed, so a capture that is cut short keeps every complete row.

``path(rel)`` and ``root`` are ``/proc/self/fd/N/...`` paths: helpers (py-spy ``--output``,
perf ``-o``, a child's stderr) write through them into this very directory, and reading
them back in diagnose reaches the same place. ``location`` is the path for people.

Text cells of CSV tables are guarded for spreadsheets (:func:`diagnose.escape.csv_cell`);
the manifest says so (``csv_text``) and the reader undoes it, so names come back exact.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
from pathlib import Path
from typing import IO, Any

from diagnose.bundle.manifest import Manifest
from diagnose.bundle.safedir import (
    DIR_MODE,
    FILE_MODE,
    SafeDir,
    UnsafeDirectory,
    write_all,
)
from diagnose.errors import OutputError
from diagnose.escape import csv_cell

__all__ = ["DIR_MODE", "FILE_MODE", "BundleWriter", "RowFile", "guarded_csv_writer"]

#: the other workers' bundles (collect/workers.py), each with a disk budget of its own
WORKERS_DIR = "workers"
WORKERS_MEMBER = "workers.json"  # what each worker's capture did
RESERVE = ".reserve"  # disk set aside during a capture, to finish the bundle on a full disk


def output_error(path: Path | str, exc: OSError) -> OutputError:
    if isinstance(exc, UnsafeDirectory):
        return OutputError(
            f"{exc}: diagnose writes only into a directory it creates, or an empty one you "
            "own that no one else may write; choose a new --out"
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return OutputError(
            f"disk full while writing {path}: free some space or use --out elsewhere"
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return OutputError(f"cannot write to {path}: {exc.strerror}; choose a writable --out")
    if exc.errno == errno.ELOOP:
        return OutputError(f"{path} is a symbolic link: not followed; choose another path")
    return OutputError(f"cannot write {path}: {exc.strerror or exc}")


_output_error = output_error  # the name other modules used


def dump_json(obj: Any) -> bytes:
    text = json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False, default=str)
    return (text + "\n").encode("utf-8")


class _GuardedWriter:
    """``csv.writer`` whose text cells go through :func:`~diagnose.escape.csv_cell`."""

    def __init__(self, fh: Any) -> None:
        self._w = csv.writer(fh)

    def writerow(self, row: Any) -> Any:
        return self._w.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Any) -> None:
        for row in rows:
            self.writerow(row)


def guarded_csv_writer(fh: Any) -> Any:
    """The CSV writer for every bundle table: text cells are spreadsheet-safe."""
    return _GuardedWriter(fh)


class BundleWriter:
    """A bundle directory being written. Collectors ask it for paths and file handles."""

    def __init__(self, directory: SafeDir) -> None:
        self.dir = directory
        self.location = directory.display  # for people: messages, the summary
        self.root = Path(f"/proc/self/fd/{directory.fd}")  # reaches the directory by descriptor

    @classmethod
    def create(cls, root: Path, default_name: bool = False) -> BundleWriter:
        """Create the bundle directory (see :meth:`SafeDir.create`). ``default_name``: the
        name was not chosen by the user; if it is taken, a random suffix is added."""
        root = Path(root)
        parent = root.parent if str(root.parent) else Path(".")
        if parent.exists() and not os.access(parent, os.W_OK | os.X_OK) and not root.exists():
            raise OutputError(
                f"cannot create {root}: {parent} is not writable; choose another --out"
            )
        try:
            return cls(SafeDir.create(root, fallback_suffix=default_name))
        except UnsafeDirectory as exc:
            raise output_error(root, exc) from None
        except OSError as exc:
            raise output_error(root, exc) from exc

    def close(self) -> None:
        self.dir.close()

    def discard(self) -> None:
        """Nothing was captured: remove the (empty) directory diagnose created."""
        self.dir.discard()

    # -- members --------------------------------------------------------------------------

    def path(self, rel: str) -> Path:
        """A path to member ``rel`` (``proc/threads.csv``) through the bundle's descriptor,
        for helpers and for reading back; its directory is created."""
        try:
            return self.dir.anchored(rel, create_dirs=True)
        except OSError as exc:
            raise output_error(self.location / rel, exc) from exc

    def is_file(self, rel: str) -> bool:
        return self.dir.is_file(rel)

    def size_of(self, rel: str) -> int:
        st = self.dir.lstat(rel)
        return st.st_size if st is not None else 0

    def read_text(self, rel: str) -> str:
        return self.dir.read_bytes(rel).decode("utf-8", "replace")

    def unlink(self, rel: str) -> None:
        with contextlib.suppress(OSError):
            self.dir.unlink(rel)

    def open_text(self, rel: str, mode: str = "w") -> IO[str]:
        """Open a text member for streaming, created 0600 (a new file; ``"a"``: appended)."""
        try:
            fd = (
                self.dir.open_append(rel)
                if "a" in mode
                else self.dir.create_file(rel, replace=True)
            )
        except OSError as exc:
            raise output_error(self.location / rel, exc) from exc
        return os.fdopen(fd, mode, encoding="utf-8", newline="")

    def open_rows(self, rel: str, header: list[str]) -> RowFile:
        """A CSV member written in whole rows only (see :class:`RowFile`)."""
        try:
            fd = self.dir.create_file(rel, replace=True)
        except OSError as exc:
            raise output_error(self.location / rel, exc) from exc
        rows = RowFile(fd, self.location / rel)
        rows.writerow(header)
        rows.commit()
        return rows

    def write_bytes(self, rel: str, data: bytes) -> Path:
        try:
            self.dir.write_atomic(rel, lambda fd: write_all(fd, data))
        except OSError as exc:
            raise output_error(self.location / rel, exc) from exc
        return self.location / rel

    def write_json(self, rel: str, obj: Any) -> Path:
        return self.write_bytes(rel, dump_json(obj))

    def write_text(self, rel: str, text: str) -> Path:
        return self.write_bytes(rel, text.encode("utf-8"))

    def write_stream(self, rel: str, write: Any) -> Path:
        """Write member ``rel`` atomically through ``write(text_file)`` (large documents)."""

        def fill(fd: int) -> None:
            with os.fdopen(os.dup(fd), "w", encoding="utf-8") as fh:
                write(fh)

        try:
            self.dir.write_atomic(rel, fill)
        except OSError as exc:
            raise output_error(self.location / rel, exc) from exc
        return self.location / rel

    def write_manifest(self, manifest: Manifest) -> None:
        self.write_json("manifest.json", manifest.to_dict())

    def reserve(self, nbytes: int) -> None:
        """Set ``nbytes`` of disk aside (``.reserve``) so that a capture that fills the disk
        can still finish its bundle: :meth:`release_reserve` frees it once recording ends."""
        try:
            fd = self.dir.create_file(RESERVE)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, nbytes)
        except OSError:  # no room even for that, or no fallocate here: go on without
            self.unlink(RESERVE)
        finally:
            os.close(fd)

    def release_reserve(self) -> None:
        self.unlink(RESERVE)

    def size_bytes(self) -> int:
        """This capture's bytes (the other workers' bundles have budgets of their own)."""
        return sum(
            size
            for rel, size in self.dir.walk_sizes()
            if rel != RESERVE and not rel.startswith(f"{WORKERS_DIR}/")
        )

    def free_bytes(self) -> int:
        return self.dir.free_bytes()


class RowFile:
    """A CSV file that only ever holds whole rows.

    Rows are gathered in memory and written with one ``commit`` per tick; when a write fails
    half-way (the disk filled up), the file is cut back to the last whole row before the
    error is raised. So a capture ended by a full disk leaves every table readable to its
    last complete tick, never with a torn line. Text cells are spreadsheet-safe.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path
        self.size = 0
        self._buf = io.StringIO()
        self._csv = guarded_csv_writer(self._buf)

    def writerow(self, row: Any) -> None:
        self._csv.writerow(row)

    def commit(self) -> None:
        data = self._buf.getvalue().encode("utf-8")
        self._buf.seek(0)
        self._buf.truncate()
        if not data:
            return
        try:
            write_all(self.fd, data)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
                os.lseek(self.fd, self.size, os.SEEK_SET)
            raise output_error(self.path, exc) from exc
        self.size += len(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def __enter__(self) -> RowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
