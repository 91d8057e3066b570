"""Helper processes (py-spy, perf) that can never outlive diagnose.

Each is started by :func:`diagnose.spawn.spawn`: in its own session, so a Ctrl-C in the
terminal reaches diagnose only and diagnose decides how to stop them; with SIGINT from the
kernel if diagnose dies (``PR_SET_PDEATHSIG``), which makes py-spy and perf write what they
have and exit (one that finds diagnose already gone when it arms the signal exits at once);
and each is given a bounded run time of its own (``--duration``, ``-- sleep``) as a last
resort.
Stopping is SIGINT, a grace period, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from diagnose.spawn import spawn

#: every running helper, with what it does (its label: "py-spy trace", "perf record sched")
_LIVE: dict[subprocess.Popen[bytes], str] = {}
#: a piped stdout's buffer and pipe size. Each read from the pipe lets go of the GIL and
#: waits to take it back while the other finishing collectors convert (up to the 5 ms switch
#: interval): read 8 KB at a time, a torch service's 20 MB scheduler trace waited 1.9 s on
#: its reads for perf script's 0.4 s of work (docs/performance.md, section 2)
PIPE_BYTES = 1 << 20
_LIVE_LOCK = threading.Lock()


#: the label of a helper that accounts for its own CPU: another diagnose capturing one
#: worker of the same service (collect/workers.py), whose bundle has its own tool CPU
#: (its py-spy and perf included); left out of this capture's (collect/toolcpu.py)
OWN_ACCOUNT = "diagnose (a worker's capture)"

_ANCHORED = re.compile(r"^/proc/self/fd/(\d+)(?:/|$)")
#: an anchored path as a whole argument or as an option's value (``--csv=/proc/self/fd/N/x``)
_ANCHORED_ARG = re.compile(r"^(?:[^=/]*=)?/proc/self/fd/(\d+)(?:/|$)")


def anchored_fds(argv: Sequence[str]) -> tuple[int, ...]:
    """Descriptors that ``/proc/self/fd/N/...`` arguments (and ``--opt=/proc/self/fd/N/...``)
    name: the child gets them under the same numbers, so those paths reach the directories
    diagnose holds open (``bundle/safedir.py``)."""
    fds: set[int] = set()
    for arg in argv:
        m = _ANCHORED_ARG.match(str(arg))
        if m:
            fds.add(int(m.group(1)))
    return tuple(sorted(fds))


class Child:
    """A running helper process whose stderr goes to a file (and its stdout too, unless
    ``stdout_pipe``: then it is read from ``proc.stdout``, e.g. ``perf script``).

    ``stderr`` is a descriptor of a file diagnose created (taken over; open it for reading
    and writing, :meth:`stderr_text` reads it back), or a path: a
    new file is created there, never through a link (``O_EXCL|O_NOFOLLOW``), except that a
    ``/proc/self/fd/N/NAME`` path (a bundle member) is truncated if it exists. Arguments
    that are such paths make the child inherit descriptor N (see :func:`anchored_fds`)."""

    def __init__(
        self,
        argv: Sequence[str],
        stderr_path: Path | int,
        cwd: str | None = None,
        stdout_pipe: bool = False,
        label: str = "",
        env: dict[str, str] | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.argv = list(argv)
        #: what this helper does, as diagnose's CPU accounting names it (collect/toolcpu.py)
        self.label = label or Path(self.argv[0]).name
        self.started = time.monotonic()
        if isinstance(stderr_path, int):
            fd = stderr_path
            self.stderr_path: Path | None = None
        else:
            self.stderr_path = Path(stderr_path)
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            flags |= os.O_TRUNC if _ANCHORED.match(str(stderr_path)) else os.O_EXCL
            fd = os.open(stderr_path, flags, 0o600)
        self._err_fd = fd  # kept open to read the stderr back, whatever its path becomes
        self.proc = spawn(
            self.argv,
            death_signal=signal.SIGINT,  # the tools write what they have, and exit
            umask=0o077,  # what the tool writes into the bundle is private too
            stdout=subprocess.PIPE if stdout_pipe else fd,
            bufsize=PIPE_BYTES if stdout_pipe else -1,
            stderr=fd,
            cwd=cwd,
            pass_fds=tuple(sorted({*anchored_fds(self.argv), *pass_fds})),
            env=env,
        )
        if stdout_pipe and self.proc.stdout is not None:
            with contextlib.suppress(OSError):  # a smaller pipe is only slower
                fcntl.fcntl(self.proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        with _LIVE_LOCK:
            _LIVE[self.proc] = self.label

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._forget()
        return rc

    def stop(self, grace: float = 5.0) -> int:
        """SIGINT (the tools flush their output), wait ``grace`` s, then SIGKILL."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait()
        self._forget()
        return self.proc.returncode

    def stderr_text(self, limit: int = 64 * 1024) -> str:
        """The last ``limit`` bytes the child wrote to its stderr file."""
        try:
            size = os.fstat(self._err_fd).st_size
            data = os.pread(self._err_fd, limit, max(0, size - limit))
        except OSError:
            return ""
        return data.decode("utf-8", "replace")

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            os.close(self._err_fd)

    def _forget(self) -> None:
        with _LIVE_LOCK:
            _LIVE.pop(self.proc, None)


def kill_all_children() -> None:
    """Last-resort cleanup (atexit, fatal error): no helper outlives diagnose."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 3
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(2)
    with _LIVE_LOCK:
        _LIVE.clear()


def live_children() -> list[int]:
    return [pid for pid, _ in live_helpers()]


def live_helpers() -> list[tuple[int, str]]:
    """The running helpers: (PID, label)."""
    with _LIVE_LOCK:  # held for the copy only: nothing that can block or switch runs under it
        procs = list(_LIVE.items())
    return [(p.pid, label) for p, label in procs if p.poll() is None]
