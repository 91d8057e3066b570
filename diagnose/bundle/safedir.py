"""Directories held open by file descriptor: diagnose never re-walks a path another user can change.

diagnose runs as root against other users' processes and reads bundles other users made, in
directories they may control (a world-writable ``/tmp/o``, the application's directory, a
bundle attached to a ticket). A path is looked up again at every use, and a directory on it
can be swapped for a symlink between two uses; a file descriptor cannot. So:

- :meth:`SafeDir.create` makes an output directory (a bundle) and opens it once. A new
  directory is created by ``mkdir`` (which fails if anything is there) relative to its
  parent's descriptor, opened with ``O_NOFOLLOW`` and checked on the descriptor: owned by us,
  mode 0700. An existing one is used only if the caller owns it, no one else may write it
  (no group or other write bit: a plain ``mkdir``'s 0755 qualifies) and it is empty: then
  nobody else can have planted anything inside; it is made 0700, so nor can they later.
- :meth:`SafeDir.open` opens an existing directory once (a bundle to read, a report's
  ``-o``), following the path as the user gave it, once.
- Everything below is reached from those descriptors: member directories with
  ``O_NOFOLLOW|O_DIRECTORY``, files with ``O_NOFOLLOW`` (new ones ``O_CREAT|O_EXCL``), atomic
  replacement by ``renameat``; files to read must be regular files (a FIFO would block).
- Helper processes (py-spy, perf) get :meth:`SafeDir.anchored` paths,
  ``/proc/self/fd/N/NAME``: the kernel resolves them from descriptor N, which
  :class:`diagnose.collect.child.Child` passes down under the same number, so the helper
  writes into the very directory diagnose opened whatever happens to the path meanwhile. The
  same path works inside diagnose (its own descriptor N).

Errors are :class:`OSError`; callers turn them into one-line messages.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

from diagnose.words import count

FILE_MODE = 0o600
DIR_MODE = 0o700
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
ANCHOR = "/proc/self/fd/"


class UnsafeDirectory(OSError):
    """An existing directory diagnose must not write into (another owner, open mode, not
    empty, a symlink). ``str()`` is the one-line reason."""

    def __str__(self) -> str:
        return str(self.strerror)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


def split_member(rel: str) -> tuple[tuple[str, ...], str]:
    """``"python/trace-000.json"`` -> (("python",), "trace-000.json"); refuses absolute
    paths, ``..``, empty parts: a member name never leaves its directory."""
    parts = tuple(p for p in str(rel).split("/") if p not in ("", "."))
    if not parts or str(rel).startswith("/") or any(p == ".." for p in parts):
        raise ValueError(f"bundle member {rel!r} escapes the bundle")
    return parts[:-1], parts[-1]


class SafeDir:
    """A directory open by descriptor, and its subdirectories (opened on first use, kept)."""

    def __init__(
        self, fd: int, display: Path, parent_fd: int | None = None, name: str = ""
    ) -> None:
        self.fd = fd
        self.display = Path(display)  # the path the user gave: for messages only
        self._parent_fd = parent_fd  # to remove the directory again (see discard)
        self._name = name
        self._subs: dict[tuple[str, ...], int] = {}
        self._lock = threading.RLock()  # collectors open member directories from threads
        self._fds = [fd] + ([parent_fd] if parent_fd is not None else [])
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path) -> SafeDir:
        """An existing directory, ``path`` followed once as given."""
        fd = os.open(path, _DIR_FLAGS)
        return cls(fd, Path(path))

    @classmethod
    def create(cls, path: str | Path, fallback_suffix: bool = False) -> SafeDir:
        """An output directory only the caller can write: created now (0700), or an existing
        empty one the caller owns and no one else may write (then made 0700).
        ``fallback_suffix``: when ``path`` exists, create ``path-XXXXXXXX`` (random) instead
        (the default bundle name is predictable). Raises :class:`UnsafeDirectory` for an
        existing directory that does not qualify, naming every reason at once."""
        path = Path(path)
        name = path.name
        if name in ("", ".", ".."):
            path = Path(os.path.abspath(path))
            name = path.name
        parent = path.parent
        if not parent.exists():
            os.makedirs(parent, mode=DIR_MODE, exist_ok=True)
        parent_fd = os.open(parent, _DIR_FLAGS)
        try:
            created = False
            for attempt in range(8):
                try:
                    os.mkdir(name, DIR_MODE, dir_fd=parent_fd)
                    created = True
                    break
                except FileExistsError:
                    if not fallback_suffix:
                        break
                    base = path.name
                    name = f"{base}-{secrets.token_hex(4)}"
                    if attempt == 7:
                        raise
            try:
                fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise UnsafeDirectory(
                        exc.errno, f"{parent / name} is a symbolic link"
                    ) from None
                if exc.errno == errno.ENOTDIR:
                    raise UnsafeDirectory(
                        exc.errno, f"{parent / name} exists and is not a directory"
                    ) from None
                raise
            try:
                _check_output(fd, parent / name, created)
            except BaseException:
                os.close(fd)
                raise
        except BaseException:
            os.close(parent_fd)
            raise
        return cls(fd, parent / name, parent_fd=parent_fd, name=name if created else "")

    @classmethod
    def private(cls, path: str | Path) -> SafeDir:
        """A directory of ours alone that outlives this process (a cache): created (0700)
        with its parents if missing, else used only if our effective user owns it and its
        mode is 0700 (it may hold files: only we can have put them there). Reached from ``/``
        one component at a time (:func:`open_trusted_path`), never through a link at its
        last step. Raises :class:`UnsafeDirectory` or OSError."""
        path = Path(os.path.abspath(path))
        parent_fd = open_trusted_path(path.parent, create=True)
        try:
            created = False
            with contextlib.suppress(FileExistsError):
                os.mkdir(path.name, DIR_MODE, dir_fd=parent_fd)
                created = True
            try:
                fd = os.open(path.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeDirectory(exc.errno, f"{path} is not a directory") from None
                raise
        finally:
            os.close(parent_fd)
        try:
            _check_private(fd, path, must_be_empty=False, fix_mode=created)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    @classmethod
    def inherited(cls, fd: int, display: str) -> SafeDir:
        """A directory another diagnose opened and passed down as descriptor ``fd`` (a
        worker's capture gets its parent's, collect/workers.py): taken only if it is ours
        alone (owned by our effective user, mode 0700); else :class:`UnsafeDirectory`."""
        _check_private(fd, Path(display), must_be_empty=False, fix_mode=False)
        return cls(fd, Path(display))

    def dup(self) -> SafeDir:
        """Another handle on the same directory (closed independently)."""
        return SafeDir(os.dup(self.fd), self.display)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def discard(self) -> None:
        """Remove the directory if it is still empty and diagnose created it (nothing was
        captured into it after all)."""
        if self._parent_fd is not None and self._name:
            with contextlib.suppress(OSError):
                os.rmdir(self._name, dir_fd=self._parent_fd)

    # -- members ------------------------------------------------------------------------

    def subdir_fd(self, parts: tuple[str, ...], create: bool = False) -> int:
        """Descriptor of the member directory ``parts`` (``()``: this one), never through a
        symlink; with ``create``, missing ones are made 0700."""
        if not parts:
            return self.fd
        with self._lock:
            fd = self._subs.get(parts)
            if fd is not None:
                return fd
            parent = self.subdir_fd(parts[:-1], create)
            name = parts[-1]
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, DIR_MODE, dir_fd=parent)
            fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
            self._subs[parts] = fd
            self._fds.append(fd)
            return fd

    def sub(self, rel: str) -> SafeDir:
        """The member directory ``rel`` as a SafeDir of its own (never through a link). Its
        descriptor is its own and goes when it is closed: only the directories above it stay
        in this one's cache (a long-lived store that opens one member per capture would
        otherwise hold a descriptor for each capture it ever opened)."""
        parts = tuple(p for p in rel.split("/") if p not in ("", "."))
        split_member(rel)  # refuses what would leave this directory
        with self._lock:
            cached = self._subs.get(parts) if parts else self.fd
        if cached is not None:
            return SafeDir(os.dup(cached), self.display / rel)
        parent = self.subdir_fd(parts[:-1])
        fd = os.open(parts[-1], _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
        return SafeDir(fd, self.display / rel)

    def locate(self, rel: str, create_dirs: bool = False) -> tuple[int, str]:
        """(descriptor of the member's directory, its name)."""
        dirs, name = split_member(rel)
        return self.subdir_fd(dirs, create_dirs), name

    def anchored(self, rel: str, create_dirs: bool = True) -> Path:
        """``/proc/self/fd/N/NAME`` for member ``rel``: a path that reaches this directory
        through its descriptor, for helpers (see :class:`~diagnose.collect.child.Child`) and
        for reading back what they wrote."""
        dfd, name = self.locate(rel, create_dirs)
        return Path(f"{ANCHOR}{dfd}/{name}")

    def create_file(self, rel: str, mode: int = FILE_MODE, replace: bool = False) -> int:
        """A new file, opened for writing: never an existing one, never through a link.
        ``replace``: a file already there (ours, from an earlier step) is removed first."""
        dfd, name = self.locate(rel, create_dirs=True)
        if replace:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dfd)
        return os.open(name, _NEW_FLAGS, mode, dir_fd=dfd)

    def write_new(self, rel: str, data: bytes) -> None:
        """A new file ``rel`` holding ``data`` (:meth:`create_file`: never an existing one)."""
        fd = self.create_file(rel)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def open_append(self, rel: str) -> int:
        """An existing member for appending (created if missing), never through a link."""
        dfd, name = self.locate(rel, create_dirs=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(name, flags, FILE_MODE, dir_fd=dfd)

    def open_read(self, rel: str) -> int:
        """A member for reading: a regular file reached without following any link."""
        dfd, name = self.locate(rel)
        fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, f"{rel} is not a regular file")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def lstat(self, rel: str) -> os.stat_result | None:
        """The member's own status (a link is not followed), or None when absent."""
        try:
            dfd, name = self.locate(rel)
            return os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except (OSError, ValueError):
            return None

    def is_file(self, rel: str) -> bool:
        st = self.lstat(rel)
        return st is not None and stat.S_ISREG(st.st_mode)

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        fd = self.open_read(rel)
        with os.fdopen(fd, "rb") as fh:
            return fh.read() if limit is None else fh.read(limit)

    def unlink(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            dfd, name = self.locate(rel)
            os.unlink(name, dir_fd=dfd)

    def clear(self, keep: frozenset[str] = frozenset()) -> int:
        """Remove everything below this directory but the top-level files named in ``keep``;
        links are removed, never followed (every step is relative to a descriptor). Returns
        the bytes freed."""
        freed = 0
        with self._lock:  # member directories opened earlier are about to go
            stale = list(self._subs.values())
            self._subs.clear()
            self._fds[:] = [fd for fd in self._fds if fd not in stale]
            _close_all(stale)
        for top, dirs, files, dfd in os.fwalk(".", dir_fd=self.fd, topdown=False):
            for name in files:
                if top == "." and name in keep:
                    continue
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                os.unlink(name, dir_fd=dfd)
                freed += st.st_size
            for name in dirs:
                try:
                    os.rmdir(name, dir_fd=dfd)
                except NotADirectoryError:  # a link to a directory: the link goes
                    os.unlink(name, dir_fd=dfd)
        return freed

    def remove_tree(self, rel: str) -> int:
        """Remove member directory ``rel`` and everything in it (never through a link: a
        link at ``rel`` itself is removed as a file). Returns the bytes freed."""
        dirs, name = split_member(rel)
        parent = self.subdir_fd(dirs)
        try:
            fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(name, dir_fd=parent)
            return 0
        with SafeDir(fd, self.display / rel) as sub:
            freed = sub.clear()
        with self._lock:  # a cached descriptor below ``rel`` would keep the old one open
            parts = (*dirs, name)
            for key in [k for k in self._subs if k[: len(parts)] == parts]:
                stale = self._subs.pop(key)
                self._fds.remove(stale)
                _close_all([stale])
        os.rmdir(name, dir_fd=parent)
        return freed

    def write_atomic(self, rel: str, write: Callable[[int], None]) -> None:
        """Write member ``rel`` so that it is either old or complete: ``write(fd)`` fills a
        fresh ``.NAME.tmp`` (0600, ``O_EXCL``), which then replaces ``NAME`` by ``renameat``
        (a link at ``NAME`` is replaced, never followed)."""
        dfd, name = self.locate(rel, create_dirs=True)
        tmp = f".{name}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)  # left by a killed run, or planted: never written through
        fd = os.open(tmp, _NEW_FLAGS, FILE_MODE, dir_fd=dfd)
        try:
            try:
                write(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise

    def walk_sizes(self) -> Iterator[tuple[str, int]]:
        """(relative path, size) of every file below, links not followed."""
        for top, _dirs, files, dfd in os.fwalk(".", dir_fd=self.fd):
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    yield os.path.normpath(os.path.join(top, name)), st.st_size

    def free_bytes(self) -> int:
        st = os.statvfs(self.fd)
        return st.f_bavail * st.f_frsize


def read_regular(path: str | Path, limit: int, follow: bool = True) -> tuple[bytes, os.stat_result]:
    """A file a user named (or one found next to it), and its status: a regular file only
    (opened without blocking, so a FIFO is refused, not waited on), at most ``limit`` bytes
    (``ValueError`` past it); ``follow=False`` refuses a symbolic link at its last step."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise OSError(errno.ELOOP, "it is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit // (1024 * 1024)} MiB: not a file diagnose wrote")
    return data, st


#: symbolic links followed on the way to a trusted directory, at most (as the kernel's 40)
MAX_LINKS = 40


def open_trusted_path(path: Path, create: bool) -> int:
    """A descriptor of directory ``path`` (absolute), reached from ``/`` one component at a
    time so that no other user can redirect it: every directory on the way is owned by root
    or by us and writable by no one else unless sticky (``/tmp``), a symbolic link is
    followed only when root or we own it, and missing directories are made (0700) with
    ``create``. Raises :class:`UnsafeDirectory` naming the component, or OSError."""
    euid = os.geteuid()
    todo = [p for p in reversed(str(path).split("/")) if p not in ("", ".")]
    fd = os.open("/", _DIR_FLAGS)
    links, where = 0, "/"
    try:
        _check_trusted_dir(os.fstat(fd), where, euid)
        while todo:
            name = todo.pop()
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, DIR_MODE, dir_fd=fd)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            where = os.path.join(where, name)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if st.st_uid not in (0, euid) or links > MAX_LINKS:
                    raise UnsafeDirectory(
                        errno.EPERM, f"{where} is a link of uid {st.st_uid}: not followed"
                    )
                target = os.readlink(name, dir_fd=fd)
                todo.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
                if target.startswith("/"):
                    os.close(fd)
                    fd, where = os.open("/", _DIR_FLAGS), "/"
                continue
            sub = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = sub
            _check_trusted_dir(os.fstat(fd), where, euid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_trusted_dir(st: os.stat_result, where: str, euid: int) -> None:
    open_to_others = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
    if st.st_uid not in (0, euid) or open_to_others:
        raise UnsafeDirectory(
            errno.EPERM,
            f"{where} belongs to uid {st.st_uid} or others may write to it: not used",
        )


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _check_private(fd: int, where: Path, must_be_empty: bool, fix_mode: bool) -> None:
    """The directory open at ``fd`` is ours alone: owned by our effective user, mode 0700
    (``fix_mode``: we just made it, and the umask may have taken bits: set 0700), empty."""
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(errno.ENOTDIR, f"{where} is not a directory")
    if st.st_uid != os.geteuid():
        raise UnsafeDirectory(
            errno.EPERM,
            f"{where} exists and belongs to uid {st.st_uid}, not to you (uid {os.geteuid()})",
        )
    if fix_mode:
        os.fchmod(fd, DIR_MODE)
    elif stat.S_IMODE(st.st_mode) != DIR_MODE:
        raise UnsafeDirectory(
            errno.EPERM,
            f"{where} exists with mode {stat.S_IMODE(st.st_mode):04o}; an existing output "
            "directory must have mode 0700",
        )
    if must_be_empty and os.listdir(fd):
        raise UnsafeDirectory(errno.ENOTEMPTY, f"{where} exists and is not empty")


def _check_output(fd: int, where: Path, created: bool) -> None:
    """The directory open at ``fd`` may hold a bundle: we just made it (``created``), or it
    is ours, empty, and no one else may write it. Every problem is named in one message;
    an accepted directory is made 0700 (the umask may have taken bits, or it was 0755)."""
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(errno.ENOTDIR, f"{where} is not a directory")
    problems: list[tuple[int, str]] = []
    if not created:
        if st.st_uid != os.geteuid():
            problems.append(
                (errno.EPERM, f"it belongs to uid {st.st_uid}, not to you (uid {os.geteuid()})")
            )
        mode = stat.S_IMODE(st.st_mode)
        # with POSIX ACLs the group bits are the mask: no group write bit, no ACL entry writes
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            problems.append((errno.EPERM, f"others may write to it (mode {mode:04o})"))
        entries = len(os.listdir(fd))
        if entries:
            problems.append((errno.ENOTEMPTY, f"it is not empty ({count(entries, 'entry')})"))
    if problems:
        reasons = "; ".join(text for _, text in problems)
        raise UnsafeDirectory(
            problems[0][0],
            f"{where} exists and cannot hold the bundle: {reasons}",
        )
    os.fchmod(fd, DIR_MODE)
