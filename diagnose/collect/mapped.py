"""Opening a file the target maps, as root, without trusting the path its maps show.

The path in ``/proc/PID/maps`` is the target's to control: it can replace the file by a
FIFO (an ``open`` that never returns), by a link to a file only root may read (whose bytes
would land in the bundle), or map it in a mount namespace of its own where the same path
is something else on the host. So a mapped file is opened only as the very file mapped:

1. ``/proc/PID/map_files/START-END`` while the target lives: the kernel's link to the
   mapping's own file, whatever its path names now;
2. else ``/proc/PID/root`` + the path, then the path itself (the target has exited), the
   last component never through a link;

each opened without blocking, kept only if it is a regular file whose device and inode are
the ones the maps line names (checked before opening, so no device is ever opened, and on
the open descriptor).
"""

from __future__ import annotations

import errno
import os
import stat


def parse_dev(text: str) -> int:
    """``"fd:01"`` (major:minor in hex, as maps writes it) -> a ``st_dev`` value; 0 when
    unreadable."""
    major, sep, minor = text.partition(":")
    try:
        return os.makedev(int(major, 16), int(minor, 16)) if sep else 0
    except ValueError:
        return 0


def _same(st: os.stat_result, dev: int, ino: int) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_dev == dev and st.st_ino == ino


def open_mapped(pid: int, start: int, end: int, path: str, dev: int, ino: int) -> int:
    """A read-only descriptor of the regular file mapped at ``[start, end)`` in ``pid``
    (device ``dev``, inode ``ino`` from its maps line). OSError when no candidate is that
    file."""
    if not ino or not path.startswith("/"):
        raise OSError(errno.ENOENT, "not a file-backed mapping")
    candidates = [
        (f"/proc/{pid}/map_files/{start:x}-{end:x}", 0),  # a kernel link: must be followed
        (f"/proc/{pid}/root{path}", os.O_NOFOLLOW),
        (path, os.O_NOFOLLOW),
    ]
    reason = "the file mapped is gone"
    for candidate, nofollow in candidates:
        try:
            st = os.stat(candidate, follow_symlinks=not nofollow)
        except OSError:
            continue
        if not _same(st, dev, ino):
            reason = f"{path} is no longer the file the process mapped"
            continue
        try:
            fd = os.open(candidate, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | nofollow)
        except OSError as exc:
            reason = f"cannot open {path}: {exc.strerror or exc}"
            continue
        if _same(os.fstat(fd), dev, ino):
            os.set_blocking(fd, True)
            return fd
        os.close(fd)
        reason = f"{path} is no longer the file the process mapped"
    raise OSError(errno.ESTALE, reason)


def open_regular(path: str) -> int:
    """A read-only descriptor of ``path`` if it is a regular file, opened without blocking
    (a FIFO is refused, not waited on). OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return fd
