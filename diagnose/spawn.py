"""The one way diagnose starts a process: in a session of its own, dying with diagnose.

Every child (py-spy, perf, the user's command under ``run``, a sweep's load generator and
service, a demo's sample, the probes of ``doctor`` and perf's capability checks) is started
by :func:`spawn`, which

- puts it in a session (and process group) of its own, so a Ctrl-C at the terminal reaches
  diagnose alone and diagnose decides how to stop it;
- arms ``PR_SET_PDEATHSIG`` in the child before it runs anything: the kernel sends it
  ``death_signal`` when diagnose dies, however it dies (SIGKILL included); one that finds
  diagnose already gone by then exits at once; that signal's action is reset to the
  default, since one ignored where diagnose started (SIGINT, in a shell's background job)
  would stay ignored across exec and the child would outlive diagnose;
- closes every descriptor but the ones passed, and gives it no stdin.

No Python code runs between the fork and the exec: a lock another thread held at the fork
(tracemalloc's, a logging handler's) would never be released in the child, which would hang
there holding copies of every descriptor, the capture lock's included. The settings above
are made by a small exec shim instead, :data:`SHIM`, run by this same interpreter (``-I
-S``: no site, no environment) after the exec, which then executes the command in place
(its PID stays the child's).

PDEATHSIG reaches the child itself, not its own children; ``run`` adds a guard process for
the user's command's whole group (diagnose/run.py). The signal follows the *thread* that
started the child: children are started from threads that outlive them (the main thread,
or a collector's thread that stops its child before it ends).

:func:`run` is :func:`subprocess.run` for the short commands (version checks, probes):
spawned the same way, killed at its timeout or when diagnose is interrupted.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import psutil

_PR_SET_PDEATHSIG = 1
_PR_SET_PTRACER = 0x59616D61  # Yama: let this PID (diagnose) and its children trace us

_libc = None
with contextlib.suppress(OSError, TypeError):
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


#: the shim: argv = parent, death signal (0: none), umask (-1: none), ptracer (0/1), the
#: command's resolved path, then the command's argv
SHIM = """import os, signal, sys
parent, death, mask, ptracer = map(int, sys.argv[1:5])
path, argv = sys.argv[5], sys.argv[6:]
signal.pthread_sigmask(signal.SIG_SETMASK, ())
for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):  # the interpreter ignores them: exec keeps that
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
if mask >= 0:
    os.umask(mask)
if death or ptracer:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if death:
        if death not in (signal.SIGKILL, signal.SIGSTOP):  # (those have no handler to reset)
            signal.signal(death, signal.SIG_DFL)
        libc.prctl(1, death, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    if ptracer:
        libc.prctl(0x59616D61, parent, 0, 0, 0)
os.execv(path, argv)
"""


def _resolve(program: str, env: Any) -> str:
    """``program``'s path as execvp would find it (the PATH of ``env``, else ours), raising
    what Popen raises for a command that cannot run: the shim would only exit."""
    search = (env if env is not None else os.environ).get("PATH", os.defpath)
    found = shutil.which(program, path=search)
    if found is not None:
        return found
    if os.sep in program and os.path.exists(program):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    if os.sep not in program and any(
        os.path.exists(os.path.join(d, program)) for d in search.split(os.pathsep) if d
    ):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _setup(
    parent: int, death_signal: int | None, umask: int | None, ptracer: bool
) -> None:  # runs in the child between fork and exec: where there is no interpreter to exec
    if umask is not None:
        os.umask(umask)
    # exec keeps the signal mask: diagnose holds SIGINT/SIGTERM/SIGHUP while it starts or
    # stops a command (diagnose/run.py), and a child must not inherit that
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    if _libc is not None and death_signal is not None:
        _libc.signal(int(death_signal), None)  # SIG_DFL (module docstring)
        _libc.prctl(_PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
        if os.getppid() != parent:  # diagnose died before the signal was armed
            os._exit(1)
    if _libc is not None and ptracer:
        # Where Yama restricts ptrace to descendants (ptrace_scope=1), let diagnose's helpers
        # (py-spy, perf: its children, not this process's ancestors) read this process.
        # Harmless (EINVAL) where Yama is absent.
        _libc.prctl(_PR_SET_PTRACER, parent, 0, 0, 0)


def spawn(
    argv: Sequence[str],
    *,
    death_signal: int | None = signal.SIGTERM,
    umask: int | None = None,
    ptracer: bool = False,
    stdin: Any = subprocess.DEVNULL,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """Start ``argv`` (module docstring). ``death_signal``: what the child gets when diagnose
    dies (SIGINT for tools that then write what they have; None only for a guard that must
    outlive diagnose to clean up after it). Other keywords go to :class:`subprocess.Popen`;
    its errors (``OSError``) are the caller's to word."""
    parent = os.getpid()
    argv = list(argv)
    if not sys.executable:  # an embedded interpreter: nothing to run the shim with
        return subprocess.Popen(
            argv,
            stdin=stdin,
            start_new_session=True,
            close_fds=True,
            preexec_fn=lambda: _setup(parent, death_signal, umask, ptracer),
            **popen,
        )
    path = _resolve(argv[0], popen.get("env"))
    flags = [str(parent), str(int(death_signal or 0)), str(-1 if umask is None else umask)]
    shim = [sys.executable, "-I", "-S", "-c", SHIM, *flags, str(int(ptracer)), path, *argv]
    proc = subprocess.Popen(shim, stdin=stdin, start_new_session=True, close_fds=True, **popen)
    proc.args = argv  # what was run, as the caller named it
    return proc


def end_marked(marker: str, grace: float = 2.0) -> list[int]:
    """Stop every process whose environment holds ``marker`` (``NAME=VALUE``: set on the
    commands diagnose launched, and inherited by whatever they start, wherever it went:
    a daemon that left their group, forked again and was reparented), except diagnose
    itself: SIGTERM, ``grace`` seconds, SIGKILL. Their PIDs."""
    entry, me = marker.encode(), os.getpid()
    procs = [p for p in psutil.process_iter() if p.pid != me and _has_env(p.pid, entry)]
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _gone, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=2.0)
    return [p.pid for p in procs]


def _has_env(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return entry in fh.read(1 << 20).split(b"\0")
    except OSError:
        return False


def run(
    argv: Sequence[str],
    timeout: float,
    *,
    text: bool = True,
    input: str | None = None,
    **popen: Any,
) -> subprocess.CompletedProcess[Any]:
    """Run a short command to its end and capture its output, like ``subprocess.run(...,
    capture_output=True, check=False)`` (``input`` to its stdin); raises ``OSError`` or
    ``subprocess.TimeoutExpired`` (the command killed first), and on any other way out kills
    the command too."""
    extra: dict[str, Any] = {"errors": "replace"} if text else {}
    if input is not None:
        extra["stdin"] = subprocess.PIPE
    proc = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text, **extra, **popen)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
