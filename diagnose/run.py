"""``diagnose run -- CMD ...``: start a command, capture it like ``attach``, never leave it behind.

The command runs in a session (and process group) of its own, so a Ctrl-C at the terminal
reaches diagnose alone, which ends the capture and then stops the command's whole group.
If diagnose itself dies, two things bring the command down:

- ``PR_SET_PDEATHSIG`` (SIGTERM) on the command's first process;
- a guard (``/bin/sh``, in its own session) that holds the read end of a pipe whose write
  end only diagnose has: when diagnose exits without saying ``done`` (it was killed), the
  guard sends the command's process group SIGTERM, then SIGKILL two seconds later. This
  also reaches the command's own children, which PDEATHSIG does not.

The command's first process is not reaped until its group has been stopped, so its PID, and
with it the group's ID, cannot be reused by an unrelated process in between.

The capture itself is :func:`diagnose.collect.session.capture` on the command's PID after a
warm-up; its bundle gets a ``capture.run`` section with the command's exit status.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import psutil

from diagnose.bundle.writer import BundleWriter
from diagnose.collect.base import CaptureOptions
from diagnose.collect.redact import redact_argv
from diagnose.collect.session import CaptureResult, capture, validate_options
from diagnose.errors import OutputError, TargetError, UsageError
from diagnose.spawn import end_marked, spawn

#: The guard: exits quietly on "done", else (diagnose died: EOF) stops the command's group.
_GUARD = (
    'read -r word; [ "$word" = done ] && exit 0; '
    'kill -TERM "-$1" 2>/dev/null; sleep 2; kill -KILL "-$1" 2>/dev/null; exit 0'
)
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: in the environment of every command diagnose launches, and so of what it starts: marks
#: what they left behind, wherever it went (spawn.end_marked)
LAUNCH_ENV = ("DIAGNOSE_LAUNCHED_BY", f"{os.getpid()}-{secrets.token_hex(4)}")


@dataclass(frozen=True)
class CommandExit:
    """How the command ended. ``exit_code`` or ``signal`` is set, never both."""

    argv: tuple[str, ...]  # redacted
    pid: int
    exit_code: int | None
    signal: str | None
    ran_s: float  # from start to exit (or to diagnose's stop signal)
    exited_before_capture_end: bool  # it ended on its own while diagnose was capturing
    stopped_by: str | None  # the signal diagnose sent after the capture, if it was running

    def describe(self) -> str:
        how = (
            f"exited with code {self.exit_code}"
            if self.exit_code is not None
            else f"was killed by {self.signal}"
        )
        if self.stopped_by:
            return f"{how} after diagnose stopped it ({self.stopped_by}) at the end of the capture"
        if self.exited_before_capture_end:
            return f"{how} {self.ran_s:.1f} s after it started, before the capture ended"
        return f"{how} {self.ran_s:.1f} s after it started"

    def to_dict(self) -> dict[str, Any]:
        return {
            "argv": list(self.argv),
            "pid": self.pid,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "ran_s": round(self.ran_s, 3),
            "exited_before_capture_end": self.exited_before_capture_end,
            "stopped_by": self.stopped_by,
            "description": self.describe(),
        }


@dataclass
class RunResult:
    capture: CaptureResult
    command: CommandExit

    @property
    def partial(self) -> bool:
        return self.capture.partial


class LaunchedCommand:
    """The user's command, started in its own session and guarded against our death.

    What a command starts carries :data:`LAUNCH_ENV` in its environment: a descendant that
    left the group (fork, ``setsid``, fork), which ``killpg`` cannot reach, is found by it and
    stopped with the last command still running (:func:`diagnose.spawn.end_marked`)."""

    _live = 0
    _live_lock = threading.Lock()

    def __init__(
        self,
        argv: Sequence[str],
        stdout: int | IO[Any] | None = None,
        *,
        stderr: int | IO[Any] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.argv = list(argv)
        self.started = time.monotonic()
        self.ended: float | None = None
        self._guard_fd: int | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        # The command and its guard start as one step: a SIGTERM between the two would leave
        # the command's children (PDEATHSIG reaches its first process alone) unguarded.
        held = threading.current_thread() is threading.main_thread()
        if held:
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            self._start(stdout, stderr, env, cwd, pass_fds)
        finally:
            if held:
                self._unblock()

    def _unblock(self) -> None:
        """Let the held signals in; one that came meanwhile raises here, and the command
        started meanwhile is stopped before it goes on up."""
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        except BaseException:
            if hasattr(self, "proc"):
                self.stop(grace=2.0, capture_ended=False)
            raise

    def _start(
        self,
        stdout: int | IO[Any] | None,
        stderr: int | IO[Any] | None,
        env: Mapping[str, str] | None,
        cwd: str | Path | None,
        pass_fds: Sequence[int],
    ) -> None:
        try:
            self.proc = spawn(
                self.argv,
                death_signal=signal.SIGTERM,
                ptracer=True,  # diagnose's py-spy and perf may read it under Yama too
                stdout=stdout,
                stderr=stderr,
                env={**(os.environ if env is None else env), LAUNCH_ENV[0]: LAUNCH_ENV[1]},
                cwd=None if cwd is None else str(cwd),
                pass_fds=tuple(pass_fds),
            )
        except FileNotFoundError:
            raise TargetError(f"cannot start {self.argv[0]!r}: command not found") from None
        except PermissionError:
            raise TargetError(f"cannot start {self.argv[0]!r}: permission denied") from None
        except OSError as exc:
            raise TargetError(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from None
        self.pgid = self.proc.pid  # a session leader leads its own process group
        with LaunchedCommand._live_lock:
            LaunchedCommand._live += 1
        self._counted = True
        try:
            self._start_guard()
        except BaseException:
            # a signal another thread of ours took (the held mask is this thread's alone)
            # runs its handler here: the command must not outlive it unguarded
            self.stop(grace=2.0, capture_ended=False)
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _start_guard(self) -> None:
        read_fd, write_fd = os.pipe()  # both close-on-exec: the command inherits neither
        try:
            self._guard = spawn(
                ["/bin/sh", "-c", _GUARD, "diagnose-run-guard", str(self.pgid)],
                death_signal=None,  # it must outlive diagnose: that is when it acts
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._guard_fd = write_fd
        except OSError:
            os.close(write_fd)  # PDEATHSIG still covers the command's first process
        finally:
            os.close(read_fd)

    def _release_guard(self) -> None:
        if self._guard_fd is not None:
            with contextlib.suppress(OSError):
                os.write(self._guard_fd, b"done\n")
            os.close(self._guard_fd)
            self._guard_fd = None
        if self._guard is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._guard.wait(5)
            self._guard = None

    def status(self) -> tuple[int | None, str | None] | None:
        """(exit code, signal name) once the first process exited, else None; never reaps."""
        if self.proc.returncode is not None:
            return _decode(self.proc.returncode)
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return None
        if info is None or info.si_pid == 0:
            return None
        if self.ended is None:
            self.ended = time.monotonic()
        if info.si_code == os.CLD_EXITED:
            return info.si_status, None
        return None, _signal_name(info.si_status)

    def warm_up(self, seconds: float, progress: Callable[[str], None] | None = None) -> None:
        """Wait ``seconds`` for the command to start up; it exiting meanwhile is an error."""
        deadline = self.started + seconds
        while True:
            st = self.status()
            if st is not None:
                code, sig = st
                how = f"with code {code}" if sig is None else f"killed by {sig}"
                raise TargetError(
                    f"the command {self.argv[0]!r} exited {how} "
                    f"{time.monotonic() - self.started:.1f} s after it started, during the "
                    f"{seconds:g} s warm-up, before the capture began (its own output, if any, is above)"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if progress is not None:
                progress(f"warming up: {left:4.1f} s before the capture starts")
            time.sleep(min(0.05, left))

    def _members(self) -> list[psutil.Process]:
        """Live (non-zombie) processes in the command's process group."""
        out = []
        for p in psutil.process_iter():
            try:
                if os.getpgid(p.pid) == self.pgid and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except (OSError, psutil.Error):
                continue
        return out

    def _end_left_behind(self) -> None:
        """Once no command of diagnose's runs any more, stop the processes they left."""
        with LaunchedCommand._live_lock:
            if getattr(self, "_counted", False):
                self._counted = False
                LaunchedCommand._live -= 1
            last = LaunchedCommand._live == 0
        if last:
            end_marked("=".join(LAUNCH_ENV))

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def _wait_group(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self._members():
                return True
            time.sleep(0.05)
        return not self._members()

    def stop(self, grace: float, capture_ended: bool) -> CommandExit:
        """Stop the whole group (SIGTERM, ``grace`` s, SIGKILL), then reap the command.

        Signals are held off meanwhile, so a second Ctrl-C cannot cut the stop short.
        """
        blocked = threading.current_thread() is threading.main_thread()
        if blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            exited_on_its_own = self.status() is not None
            stopped_by: str | None = None
            if self._members():
                self._signal_group(signal.SIGTERM)
                if not exited_on_its_own:
                    stopped_by = "SIGTERM"
                if not self._wait_group(grace):
                    self._signal_group(signal.SIGKILL)
                    if self.status() is None:
                        stopped_by = "SIGKILL"
                    self._wait_group(5)
            if self.ended is None:
                self.ended = time.monotonic()
            code = self.proc.wait()
            self._release_guard()
            self._end_left_behind()
        finally:
            if blocked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        exit_code, sig = _decode(code)
        return CommandExit(
            argv=tuple(redact_argv(self.argv)),
            pid=self.pid,
            exit_code=exit_code,
            signal=sig,
            ran_s=(self.ended or time.monotonic()) - self.started,
            exited_before_capture_end=exited_on_its_own and capture_ended,
            stopped_by=stopped_by,
        )


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _decode(returncode: int) -> tuple[int | None, str | None]:
    return (returncode, None) if returncode >= 0 else (None, _signal_name(-returncode))


@contextlib.contextmanager
def terminate_is_interrupt() -> Iterator[None]:
    """Outside the capture (which handles them itself), SIGTERM and SIGHUP unwind like Ctrl-C,
    so the command is stopped on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    saved = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def validate_run(argv: Sequence[str], warmup: float, grace: float) -> None:
    if not argv:
        raise UsageError("no command given: diagnose run [OPTIONS] -- CMD [ARGS...]")
    if not (0 <= warmup <= 3600):
        raise UsageError(f"--warmup must be 0 to 3600 seconds, not {warmup:g}")
    if not (0 <= grace <= 600):
        raise UsageError(f"--grace must be 0 to 600 seconds, not {grace:g}")


def _remove_if_empty(writer: BundleWriter | None) -> None:
    """No capture happened: take back the directory we created for it (nothing else)."""
    if writer is not None:
        writer.discard()


def run_command(
    argv: Sequence[str],
    out: Path | None,
    options: CaptureOptions,
    *,
    warmup: float = 1.0,
    grace: float = 5.0,
    follow_children: bool = True,
    progress: Callable[[str], None] | None = None,
    command: list[str] | None = None,
    stdout: int | IO[Any] | None = None,
) -> RunResult:
    """Start ``argv``, wait ``warmup`` s, capture it into ``out``, stop it; return both.

    Raises :class:`~diagnose.errors.TargetError` when the command cannot start or exits
    during the warm-up (no bundle is written then), and whatever the capture raises; the
    command is stopped on every path out.
    """
    validate_options(options)
    validate_run(argv, warmup, grace)
    writer = None
    if out is not None:  # an unusable --out fails now, before the command starts
        writer = BundleWriter.create(out)
    with terminate_is_interrupt():
        result: CaptureResult | None = None
        try:
            child = LaunchedCommand(argv, stdout=stdout)
        except BaseException:
            _remove_if_empty(writer)
            raise
        try:
            child.warm_up(warmup, progress)
            result = capture(
                child.pid,
                out,
                options,
                follow_children=follow_children,
                progress=progress,
                command=command,
                writer=writer,
            )
        finally:
            exit_ = child.stop(grace, capture_ended=result is not None)
            if result is None:
                _remove_if_empty(writer)
    result.manifest.capture = replace(result.manifest.capture, run=exit_.to_dict())
    try:
        assert result.writer is not None
        result.writer.write_manifest(result.manifest)
    except OutputError:
        pass  # the bundle stays valid without it; the terminal still reports the exit
    return RunResult(result, exit_)
