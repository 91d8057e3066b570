"""One error type for everything a user can cause or fix, carrying its exit code.

The CLI turns a :class:`DiagnoseError` into a one-line message on stderr and the exit code
below; anything else is a bug (exit code ``INTERNAL``). The codes are part of the stable
interface: the README's table is generated from :data:`MEANINGS` (``python -m
diagnose.errors README.md``; a test keeps it current).
"""

from __future__ import annotations

import re
import sys
from enum import IntEnum
from pathlib import Path


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


#: What each code means to a user, one table row each: the README's table is made of these.
MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success; also for a process that is not Python, whose capture is complete "
    "without py-spy: its verdict rests on native stacks and thread states alone, which the "
    "summary's second line and the reports' tops say (`report.json`: `target.is_python` is "
    "false)",
    ExitCode.INTERNAL: "internal error (a bug in diagnose: please report it with the traceback)",
    ExitCode.USAGE: "bad arguments, a PID that is not a positive whole number among them "
    "(`diagnose attach abc`)",
    ExitCode.NO_TARGET: "no such process, it exited before the capture, or the ID given is a "
    "thread's rather than its process's; for `run`: the command could not be started or "
    "exited during the warm-up",
    ExitCode.PERMISSION: "not permitted to trace the process (run as root, add `CAP_SYS_PTRACE`)",
    ExitCode.PARTIAL: "a bundle was written but is partial (the target exited, a collector failed)",
    ExitCode.OUTPUT: "the output directory is not writable, or exists and is not an empty "
    "directory you own that no one else may write (or is a symbolic link), every reason on "
    "one line; the disk is full, or the disk budget was hit",
    ExitCode.BAD_INPUT: "a bundle is missing, corrupt, or of a newer schema; a load stats file "
    "given to compare, a sweep's record or a report.json cannot be read or is malformed; "
    "`export`: the bundle holds no stacks",
    ExitCode.BAD_RULES: "a rule file is invalid (`diagnose rules check`)",
    ExitCode.BUSY: "another capture of the same process is running",
    ExitCode.LOAD_GENERATOR: "`sweep`: the load generator is not installed or not on PATH, or "
    "it failed at the first step",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM) outside a capture, e.g. during `run`'s "
    "warm-up (an interrupted capture ends normally: its bundle and report are written)",
}

#: the README's generated table sits between these two lines
TABLE_BEGIN = "<!-- exit-codes: generated from diagnose/errors.py by `python -m diagnose.errors README.md` -->"
TABLE_END = "<!-- /exit-codes -->"


def exit_code_table() -> str:
    """The README's exit-code table (Markdown), one row per :class:`ExitCode`."""
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {int(code)} | {MEANINGS[code].replace('|', chr(92) + '|')} |" for code in ExitCode]
    return "\n".join(rows) + "\n"


def with_exit_code_table(readme: str) -> str:
    """``readme`` with the text between its table markers replaced by :func:`exit_code_table`."""
    pattern = re.compile(re.escape(TABLE_BEGIN) + r"\n.*?" + re.escape(TABLE_END), re.S)
    if not pattern.search(readme):
        raise ValueError(f"the README has no {TABLE_BEGIN!r} ... {TABLE_END!r} section")
    block = f"{TABLE_BEGIN}\n{exit_code_table()}{TABLE_END}"
    return pattern.sub(lambda _m: block, readme, count=1)


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
    """``holder``: the PID the kernel names as the lock's owner, where it says."""

    exit_code = ExitCode.BUSY

    def __init__(self, message: str, holder: int | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class LoadGeneratorError(DiagnoseError):
    exit_code = ExitCode.LOAD_GENERATOR


def main(argv: list[str]) -> None:
    """``python -m diagnose.errors [README.md]``: print the table, or rewrite it in place."""
    if not argv:
        sys.stdout.write(exit_code_table())
        return
    path = Path(argv[0])
    path.write_text(with_exit_code_table(path.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
