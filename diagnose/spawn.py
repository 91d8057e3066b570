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
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

import psutil

_PR_SET_PDEATHSIG = 1
_PR_SET_PTRACER = 0x59616D61  # Yama: let this PID (diagnose) and its children trace us

_libc = None
with contextlib.suppress(OSError, TypeError):
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _setup(
    parent: int, death_signal: int | None, umask: int | None, ptracer: bool
) -> None:  # runs in the child between fork and exec: async-signal-safe calls only
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
    proc = subprocess.Popen(
        list(argv),
        stdin=stdin,
        start_new_session=True,
        close_fds=True,
        preexec_fn=lambda: _setup(parent, death_signal, umask, ptracer),
        **popen,
    )
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
