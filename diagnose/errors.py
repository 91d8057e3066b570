"""One error type for everything a user can cause or fix, carrying its exit code.

The CLI turns a :class:`DiagnoseError` into a one-line message on stderr and the exit code
below; anything else is a bug (exit code ``INTERNAL``). The codes are documented in the
README and are part of the stable interface.
"""

from __future__ import annotations

from enum import IntEnum


def one_line(exc: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, at most ``limit`` characters."""
    return " ".join(str(exc).split())[:limit]


class ExitCode(IntEnum):
    OK = 0
    INTERNAL = 1  # a bug in diagnose: please report it
    USAGE = 2  # bad arguments (click's own usage errors use 2 too)
    NO_TARGET = 3  # the PID does not exist, exited before the capture, or is a wrapper
    PERMISSION = 4  # not allowed to read or trace the target
    PARTIAL = (
        5  # a bundle was written, but the capture is partial (target exited, a collector failed)
    )
    OUTPUT = 6  # the output directory is not writable, the disk is full or over budget
    BAD_INPUT = 7  # a bundle is missing, corrupt, or of an unknown schema version
    BAD_RULES = 8  # a rule file is invalid
    BUSY = 9  # another diagnose capture of the same process is running
    LOAD_GENERATOR = 10  # sweep: the load generator is missing, or failed at the first step
    INTERRUPTED = 130  # Ctrl-C or SIGTERM outside a capture (128 + SIGINT, as shells do)


class DiagnoseError(Exception):
    """An error the user can act on. ``str(error)`` is the one-line message."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(DiagnoseError):
    exit_code = ExitCode.USAGE


class TargetError(DiagnoseError):
    exit_code = ExitCode.NO_TARGET


class PermissionDenied(DiagnoseError):
    exit_code = ExitCode.PERMISSION


class OutputError(DiagnoseError):
    exit_code = ExitCode.OUTPUT


class BadBundle(DiagnoseError):
    exit_code = ExitCode.BAD_INPUT


class BadRules(DiagnoseError):
    exit_code = ExitCode.BAD_RULES


class Busy(DiagnoseError):
    exit_code = ExitCode.BUSY


class LoadGeneratorError(DiagnoseError):
    exit_code = ExitCode.LOAD_GENERATOR
