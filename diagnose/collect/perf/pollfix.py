"""A ``poll()`` for ``perf record`` that keeps it from busy-looping once a thread exits.

``perf record -p PID`` opens one event per thread of the target. When a thread that was
there at the start exits, its event reports ``POLLHUP``; perf then clears that descriptor's
``events`` (``fdarray__filter``) but leaves it in the array it polls, and the kernel reports
``POLLHUP`` whatever ``events`` asks for: every ``poll()`` returns at once, and perf spins
on a whole core until it ends (perf 6.1; figures in docs/performance.md).

The fix is a ``poll()`` that leaves the entries perf set aside (``events == 0``) out of the
call and reports nothing for them, loaded into perf with ``LD_PRELOAD``: perf then sleeps
in ``poll()`` as it does before any thread exits.
The same library serves perf ``/proc/kallsyms`` from a snapshot diagnose takes once
(:func:`_snapshot`): perf reads the kernel's symbol table four times as it starts, and the
kernel formats those 5 MB of text anew each time, and four perf processes start at once
for a two-worker service's capture, on the critical path to its window. ``perf script``
gets the snapshot through its own ``--kallsyms`` (its output is the same, byte for byte).

It is compiled from :data:`SOURCE` with the host's C compiler (``cc``) into a private
directory of its own (mode 0700, removed at exit) held open by descriptor
(``bundle/safedir.py``): the compiler's temporary files go there too, and the compiler and
perf reach it through ``/proc/self/fd/N`` paths, so nothing another user can write or swap
in (a ``$TMPDIR`` of theirs included) is ever loaded into a perf run as root. The library
built is kept in diagnose's cache (:func:`diagnose.resources.cache_dir`, named by a digest
of what it is built from) and later captures copy it from there instead of compiling: only
from a directory our user owns with mode 0700 (else it is built anew each time and that
directory left alone), and only a regular file of ours nobody else may write, with one link
(else it is built anew and put in that file's place). A worker's capture, started by the
diagnose that captures its service, is handed that one's directory by descriptor
(:func:`inherit`). Without a compiler (or where the build fails) perf runs as it is, and the
busy-loop watchdog of :mod:`diagnose.collect.perf.record` stops a perf that spins (its
recording until then is kept); the collectors say which of the two applied.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

from diagnose.bundle.safedir import ANCHOR, SafeDir
from diagnose.resources import cache_dir
from diagnose.spawn import run

SOURCE = r"""
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);

/* Poll only the entries that ask for something: perf sets an exited thread's event aside
   with events = 0, and the kernel would report POLLHUP for it on every call. */
int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    static poll_fn real;
    struct pollfd small[64], *sub = small;
    nfds_t small_at[64], *at = small_at, m = 0, i;
    int rc;

    if (!real)
        real = (poll_fn)dlsym(RTLD_NEXT, "poll");
    for (i = 0; i < nfds; i++)
        m += fds[i].events != 0;
    if (m == nfds)
        return real(fds, nfds, timeout);
    if (m > 64) {
        sub = malloc(m * sizeof(*sub));
        at = malloc(m * sizeof(*at));
        if (!sub || !at) {
            free(sub);
            free(at);
            return real(fds, nfds, timeout);
        }
    }
    m = 0;
    for (i = 0; i < nfds; i++) {
        fds[i].revents = 0;
        if (fds[i].events != 0) {
            sub[m] = fds[i];
            at[m++] = i;
        }
    }
    rc = real(sub, m, timeout);
    for (i = 0; i < m; i++)
        fds[at[i]].revents = sub[i].revents;
    if (sub != small) {
        free(sub);
        free(at);
    }
    return rc;
}

/* /proc/kallsyms from diagnose's snapshot of it (DIAGNOSE_KALLSYMS): every perf reads the
   kernel's symbol table four times as it starts, and the kernel builds that text anew each
   time (0.15 s of system time a perf record here). */
static const char *kallsyms(const char *path)
{
    const char *snap;

    if (path && strcmp(path, "/proc/kallsyms") == 0) {
        snap = getenv("DIAGNOSE_KALLSYMS");
        if (snap && *snap)
            return snap;
    }
    return path;
}

/* /proc/N/status or /proc/N/task/M/status */
static int status_path(const char *p)
{
    if (!p || strncmp(p, "/proc/", 6) != 0 || !isdigit((unsigned char)p[6]))
        return 0;
    for (p += 6; isdigit((unsigned char)*p); p++)
        ;
    if (strncmp(p, "/task/", 6) == 0 && isdigit((unsigned char)p[6]))
        for (p += 6; isdigit((unsigned char)*p); p++)
            ;
    return strcmp(p, "/status") == 0;
}

/* A thread of the target that exited between perf opening its event and perf reading its
   status: perf 6.1 then gives up the whole recording (perf record -p exits 255 as it
   starts, on any service that starts threads all the time). Its status is served as that
   of an exited thread of the target (DIAGNOSE_TARGET_PID) instead: perf names it, and it
   recorded nothing (its events were not on yet). */
static int vanished(const char *path, int fd)
{
    int saved = errno, m, n;
    const char *tgid;
    char text[128];

    if (fd >= 0 || (saved != ENOENT && saved != ESRCH) || !status_path(path))
        return fd;
    tgid = getenv("DIAGNOSE_TARGET_PID");
    n = snprintf(text, sizeof(text), "Name:\t(exited)\nTgid:\t%s\nPPid:\t0\n",
                 tgid && *tgid ? tgid : "0");
    m = memfd_create("status", MFD_CLOEXEC);
    if (m < 0)
        goto keep;
    if (write(m, text, n) != n || lseek(m, 0, SEEK_SET) != 0) {
        close(m);
        goto keep;
    }
    return m;
keep:
    errno = saved;
    return fd;
}

#define MODE(flags, mode)                           \
    do {                                            \
        if ((flags) & O_CREAT) {                    \
            va_list ap;                             \
            va_start(ap, flags);                    \
            mode = (mode_t)va_arg(ap, int);         \
            va_end(ap);                             \
        }                                           \
    } while (0)

#define OPEN(name)                                                      \
    int name(const char *path, int flags, ...)                          \
    {                                                                   \
        static int (*real)(const char *, int, ...);                     \
        mode_t mode = 0;                                                \
        MODE(flags, mode);                                              \
        if (!real)                                                      \
            real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name); \
        return vanished(path, real(kallsyms(path), flags, mode));       \
    }

#define OPENAT(name)                                                    \
    int name(int dirfd, const char *path, int flags, ...)               \
    {                                                                   \
        static int (*real)(int, const char *, int, ...);                \
        mode_t mode = 0;                                                \
        MODE(flags, mode);                                              \
        if (!real)                                                      \
            real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, #name); \
        return vanished(path, real(dirfd, kallsyms(path), flags, mode)); \
    }

#define OPEN_2(name)                                                    \
    int name(const char *path, int flags)                               \
    {                                                                   \
        static int (*real)(const char *, int);                          \
        if (!real)                                                      \
            real = (int (*)(const char *, int))dlsym(RTLD_NEXT, #name); \
        return vanished(path, real(kallsyms(path), flags));             \
    }

#define FOPEN(name)                                                     \
    FILE *name(const char *path, const char *how)                       \
    {                                                                   \
        static FILE *(*real)(const char *, const char *);               \
        if (!real)                                                      \
            real = (FILE * (*)(const char *, const char *))dlsym(RTLD_NEXT, #name); \
        return real(kallsyms(path), how);                               \
    }

OPEN(open)
OPEN(open64)
OPENAT(openat)
OPENAT(openat64)
OPEN_2(__open_2)
OPEN_2(__open64_2)
FOPEN(fopen)
FOPEN(fopen64)
"""

#: where the library finds the kallsyms snapshot
KALLSYMS_ENV = "DIAGNOSE_KALLSYMS"
#: the target's PID, for the status of its threads that exited while perf started
TARGET_ENV = "DIAGNOSE_TARGET_PID"
#: the build's bound (it takes 0.16 s here)
BUILD_TIMEOUT_S = 30.0
#: the compiler's arguments (between it and the output)
CFLAGS = ("-O2", "-shared", "-fPIC")
#: a cached library larger than this is not one diagnose built (it is about 17 KB)
MAX_LIBRARY_BYTES = 1 << 20


class _Build:
    """The library, built once per process on a thread of its own (:func:`prepare`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.path: str | None = None  # /proc/self/fd/N/pollfix.so
        self.work: SafeDir | None = None  # N
        self.kallsyms: str | None = None  # /proc/self/fd/N/kallsyms, the snapshot
        self.adopted = False  # built by the diagnose that started this one (adopt)
        self.cached = False  # copied from the cache, built by an earlier diagnose
        self.why_not = ""

    def start(self) -> None:
        with self.lock:
            if self.thread is None and self.path is None:
                self.thread = threading.Thread(
                    target=self._build, name="diagnose-pollfix", daemon=True
                )
                self.thread.start()

    def _build(self) -> None:
        try:
            work = SafeDir.create(Path(tempfile.gettempdir(), "diagnose-pollfix"), True)
            atexit.register(_remove, work)
        except OSError as exc:
            self.why_not = f"no private directory to build it in: {exc}"
            return
        if not self._from_cache_or_compile(work):
            return
        self.work = work
        self.path = str(work.anchored("pollfix.so"))
        self.kallsyms = _snapshot(work)

    def _from_cache_or_compile(self, work: SafeDir) -> bool:
        """``pollfix.so`` in ``work``: copied from the cache, else compiled (and then kept
        in the cache for the next capture); False where neither could be had."""
        cache = _cache()
        if cache is None:
            return self._compile(work)
        with cache:
            name = _cached_name()
            if _from_cache(cache, name, work):
                self.cached = True
                return True
            if not self._compile(work):
                return False
            _to_cache(cache, name, work)
            return True

    def _compile(self, work: SafeDir) -> bool:
        """Build ``pollfix.so`` in ``work`` with the host's compiler; False (``why_not``
        says why) where it cannot."""
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            self.why_not = "no C compiler (cc) to build it"
            return False
        try:
            work.write_new("pollfix.c", SOURCE.encode())
        except OSError as exc:
            self.why_not = f"no private directory to build it in: {exc}"
            return False
        lib = str(work.anchored("pollfix.so"))
        argv = [cc, *CFLAGS, "-o", lib, str(work.anchored("pollfix.c")), "-ldl"]
        env = dict(os.environ, TMPDIR=f"{ANCHOR}{work.fd}")
        try:
            done = run(argv, timeout=BUILD_TIMEOUT_S, pass_fds=(work.fd,), env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.why_not = f"{Path(cc).name} failed: {exc}"
            return False
        if done.returncode != 0 or not work.is_file("pollfix.so"):
            last = (done.stderr or "").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            self.why_not = f"{Path(cc).name} failed: {last[0][:200]}"
            return False
        return True

    def adopt(self, fd: int) -> bool:
        """Use the library (and snapshot) in the directory open at ``fd``, which the
        diagnose that started this one built (see :func:`inherit`); False, and nothing
        changed, where that is not a private directory of ours holding the library."""
        with self.lock:
            if self.thread is not None or self.path is not None:
                return False
            try:  # (the descriptor stays the caller's until it is taken)
                lib = os.stat("pollfix.so", dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISREG(lib.st_mode):
                    return False
                work = SafeDir.inherited(fd, f"the library's directory (descriptor {fd})")
            except OSError:
                return False
            self.work = work  # its builder removes it as it exits: not this process
            self.path = str(work.anchored("pollfix.so"))
            self.kallsyms = str(work.anchored("kallsyms")) if work.is_file("kallsyms") else None
            self.adopted = True
            return True

    def wait(self, timeout: float) -> str | None:
        self.start()
        if self.adopted or self.thread is None:
            return self.path
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.why_not = self.why_not or "its build did not end in time"
            return None
        return self.path


def _cache() -> SafeDir | None:
    """The cache directory, or None where there is none of ours alone (another user's, a
    link, a mode other than 0700, a read-only home): the library is then built each run."""
    try:
        return SafeDir.private(cache_dir())
    except (OSError, RuntimeError):  # (RuntimeError: no home directory to expand)
        return None


def _cached_name() -> str:
    """The cached library's name: a digest of what it is built from (the source, the
    compiler's arguments, the machine, the C library), so that a change of any builds anew."""
    libc = (os.confstr("CS_GNU_LIBC_VERSION") or "") if hasattr(os, "confstr") else ""
    what = "\0".join([SOURCE, *CFLAGS, os.uname().machine, libc])
    return f"pollfix-{hashlib.sha256(what.encode()).hexdigest()[:20]}.so"


def _from_cache(cache: SafeDir, name: str, work: SafeDir) -> bool:
    """Copy the cached library ``name`` into ``work``: only a regular file of ours that no
    one else may write, with one link, of a library's size and an ELF header."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=cache.fd
        )
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & 0o022
            or st.st_nlink != 1
            or st.st_size > MAX_LIBRARY_BYTES
        ):
            return False
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_LIBRARY_BYTES + 1)
    except OSError:
        return False
    finally:
        os.close(fd)
    if data[:4] != b"\x7fELF" or len(data) != st.st_size:
        return False
    try:
        work.write_new("pollfix.so", data)
    except OSError:
        work.unlink("pollfix.so")
        return False
    return True


def _to_cache(cache: SafeDir, name: str, work: SafeDir) -> None:
    """Keep the library just built as ``name`` in the cache, whole or not at all (a
    temporary name of its own, then renamed); nothing is said where that fails."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        cache.write_new(tmp, work.read_bytes("pollfix.so", MAX_LIBRARY_BYTES + 1))
        os.replace(tmp, name, src_dir_fd=cache.fd, dst_dir_fd=cache.fd)
    except OSError:
        cache.unlink(tmp)


def _snapshot(work: SafeDir) -> str | None:
    """A copy of ``/proc/kallsyms`` in ``work``, for perf to read instead (its path), or
    None where it cannot be read. Taken once per diagnose process: the kernel's symbols
    change only as a module loads or unloads, and a module loaded during a capture is
    then left unnamed (its frames say ``[unknown]``), nothing worse."""
    try:
        with open("/proc/kallsyms", "rb") as fh:
            text = fh.read()
        if not text:
            return None
        work.write_new("kallsyms", text)
    except OSError:
        return None
    return str(work.anchored("kallsyms"))


_BUILD = _Build()


def prepare() -> None:
    """Start building the library in the background (a no-op once started)."""
    _BUILD.start()


def inherit(fd: int) -> bool:
    """Use the library another diagnose built, in its directory open at descriptor ``fd``
    (its worker captures get it: collect/workers.py), instead of building one; False where
    that descriptor is not such a directory (the library is then built here)."""
    return _BUILD.adopt(fd)


def inherited() -> bool:
    """Whether the library in use was built by another diagnose (:func:`inherit`)."""
    return _BUILD.adopted


def cached() -> bool:
    """Whether the library in use came from the cache (:func:`cache_dir`), not built now."""
    return _BUILD.cached


def preload(timeout: float = 5.0) -> str | None:
    """The library's path, built if need be (waiting ``timeout`` seconds at most), or None:
    :func:`why_not` says why."""
    return _BUILD.wait(timeout)


def why_not() -> str:
    return _BUILD.why_not


def fds() -> tuple[int, ...]:
    """The descriptor the library's path goes through, for perf to inherit."""
    return (_BUILD.work.fd,) if _BUILD.work is not None else ()


def kallsyms() -> str | None:
    """The snapshot of ``/proc/kallsyms`` (a ``/proc/self/fd/N/kallsyms`` path) once the
    library is built, for ``perf script --kallsyms``; None without one."""
    return _BUILD.kallsyms if _BUILD.path is not None else None


def _remove(work: SafeDir) -> None:
    for name in ("pollfix.so", "pollfix.c", "kallsyms"):
        with contextlib.suppress(OSError):
            work.unlink(name)
    work.discard()
    work.close()


def environment(lib: str, target: int | None = None) -> dict[str, str]:
    """diagnose's environment for perf, with ``lib`` preloaded (before any preload already
    there), the kallsyms snapshot to read (where there is one) and the ``target`` PID."""
    env = dict(os.environ)
    with contextlib.suppress(KeyError):
        lib = f"{lib} {env['LD_PRELOAD']}"
    env["LD_PRELOAD"] = lib
    env.pop(KALLSYMS_ENV, None)
    env.pop(TARGET_ENV, None)
    if _BUILD.kallsyms is not None:
        env[KALLSYMS_ENV] = _BUILD.kallsyms
    if target is not None:
        env[TARGET_ENV] = str(target)
    return env
