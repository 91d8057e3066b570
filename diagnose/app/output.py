"""Where a command's files go: a directory opened once, then written through its descriptor.

Reports are written through a directory descriptor opened once (:func:`open_output`): the
bundle's own, held since the bundle was opened, or the ``-o`` directory's; never by
walking a path again, which the bundle's owner could have swapped for a link meanwhile.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose.bundle.safedir import SafeDir, write_all
from diagnose.bundle.writer import output_error
from diagnose.errors import OutputError, UsageError

if TYPE_CHECKING:
    from diagnose.bundle.reader import Bundle


#: ``-o -``: the one report asked for goes to stdout
STDOUT = Path("-")


def is_stream(path: Path) -> bool:
    """``-`` (stdout), something that exists and is neither a file nor a directory (a
    pipe, a terminal), or anything under /dev or /proc (``/dev/stdout`` is a link to
    ``/proc/self/fd/1``, a plain file when stdout is redirected to one): written to
    directly. Never replaced by a new file, as a report file is (that would replace the
    link /dev/stdout itself)."""
    if path == STDOUT:
        return True
    try:
        if not path.exists() or path.is_dir():
            return False
        return not path.is_file() or path.absolute().parts[1:2] in (("dev",), ("proc",))
    except OSError:
        return False


@dataclass
class OutputTarget:
    """Where reports go: a directory held open and the file name of each format in it, or
    (``stream``) stdout or a stream such as /dev/stdout for the one format asked for."""

    dir: SafeDir | None
    names: dict[str, str]
    stream: Path | None = None

    def path(self, fmt: str) -> Path:
        """For people: the path of the ``fmt`` file (``-`` for stdout)."""
        if self.stream is not None:
            return self.stream
        assert self.dir is not None
        return self.dir.display / self.names[fmt]

    def paths(self) -> dict[str, Path]:
        return {f: self.path(f) for f in self.names}

    def write(self, fmt: str, data: str | bytes) -> Path:
        """Write the ``fmt`` file (0600) so that it is either old or complete; or the
        stream."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if self.stream is not None:
            _write_stream(self.stream, raw)
            return self.stream
        assert self.dir is not None
        try:
            self.dir.write_atomic(self.names[fmt], lambda fd: write_all(fd, raw))
        except OSError as exc:
            raise output_error(self.path(fmt), exc) from exc
        return self.path(fmt)


def _write_stream(path: Path, raw: bytes) -> None:
    if path == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        return
    try:
        with path.open("wb") as fh:
            fh.write(raw)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def open_directory(path: Path, create: bool) -> SafeDir:
    try:
        if create and not path.is_dir():
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return SafeDir.open(path)
    except OSError as exc:
        raise OutputError(f"cannot write to {path}: {exc.strerror or exc}") from exc


def open_output(
    source: Bundle | SafeDir,
    formats: list[str],
    out: Path | None,
    filenames: Mapping[str, str],
) -> OutputTarget:
    """Open where the reports go, once: the source's directory (a bundle's descriptor, held
    since the bundle was opened, or a sweep directory's) unless ``out`` is given: with one
    format, ``-`` (stdout), a stream such as /dev/stdout, or a file (a name ending .html,
    .md or .json); else a directory (created if missing)."""
    if out is None:
        held = source if isinstance(source, SafeDir) else source.dir
        assert held is not None
        return OutputTarget(held, {f: filenames[f] for f in formats})
    several = len(formats) > 1
    if is_stream(out):
        if several:
            raise UsageError(
                f"-o {out} takes one report, not {len(formats)}: choose one with "
                "--format html, md or json"
            )
        return OutputTarget(None, {formats[0]: str(out)}, stream=out)
    suffixes = {".html": "html", ".htm": "html", ".md": "md", ".json": "json"}
    if not several and out.suffix.lower() in suffixes:
        return OutputTarget(open_directory(out.parent, create=True), {formats[0]: out.name})
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out} is a file; with several formats give a directory")
    return OutputTarget(open_directory(out, create=True), {f: filenames[f] for f in formats})


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) so that ``path`` is either old or complete (its
    directory is opened once, then the file is written through it)."""
    with open_directory(path.parent, create=True) as d:
        OutputTarget(d, {"file": path.name}).write("file", text)
