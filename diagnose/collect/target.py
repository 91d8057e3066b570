"""Finding the process to diagnose: does it exist, may we trace it, is it Python, and is it
only a wrapper (a shell, a gunicorn/uvicorn master) whose children do the work?"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import time
from dataclasses import dataclass, field

import psutil

from diagnose.errors import PermissionDenied, TargetError

_PY_EXE = re.compile(r"^python(\d(\.\d+)?)?[dmu]*$")
_LIBPY = re.compile(r"libpython(\d)\.(\d+)[a-z]*\.so")
_EXE_VERSION = re.compile(r"python(\d)\.(\d+)")


@dataclass(frozen=True)
class Target:
    pid: int
    comm: str
    exe: str
    cmdline: tuple[str, ...]
    uid: int
    create_time: float
    is_python: bool
    python_version: str | None  # "3.11" where the binary names it
    python_elf: str | None  # the ELF (executable or libpython) that holds the interpreter
    followed_from: int | None = None  # the wrapper PID the user gave, if we followed a child
    note: str = ""  # what we did and why, for the terminal and the manifest
    siblings: tuple[int, ...] = field(default_factory=tuple)  # other Python children

    def alive(self) -> bool:
        try:
            p = psutil.Process(self.pid)
            return p.create_time() == self.create_time and p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def ptrace_help(pid: int) -> str:
    scope = _read("/proc/sys/kernel/yama/ptrace_scope").strip()
    hint = (
        "run diagnose as root (sudo) or as the target's user; in a container add the "
        "SYS_PTRACE capability (docker run --cap-add SYS_PTRACE, or securityContext."
        "capabilities.add: [SYS_PTRACE] in Kubernetes)"
    )
    if scope and scope != "0":
        hint += (
            f"; kernel.yama.ptrace_scope is {scope}, which limits tracing to root"
            " (sysctl kernel.yama.ptrace_scope=0 relaxes it)"
        )
    return f"not permitted to trace PID {pid}: {hint}"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def check_trace_access(pid: int) -> None:
    """Raise PermissionDenied when we may not ptrace-read ``pid`` (what py-spy and
    /proc/PID/syscall need); TargetError when it vanished."""
    try:
        with open(f"/proc/{pid}/syscall", "rb") as fh:
            fh.read()
    except PermissionError as exc:
        raise PermissionDenied(ptrace_help(pid)) from exc
    except FileNotFoundError as exc:
        raise TargetError(f"process {pid} exited") from exc
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            raise TargetError(f"process {pid} exited") from exc
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise PermissionDenied(ptrace_help(pid)) from exc
        # EINVAL and friends (e.g. a kernel without CONFIG_HAVE_ARCH_TRACEHOOK): not fatal


def _python_identity(proc: psutil.Process) -> tuple[bool, str | None, str | None]:
    """(is it Python, version "3.x" if named, path of the ELF holding the interpreter)."""
    pid = proc.pid
    exe = ""
    try:
        exe = proc.exe()
    except psutil.Error:
        pass
    maps = _read(f"/proc/{pid}/maps")
    for line in maps.splitlines():
        m = _LIBPY.search(line)
        if m:
            path = line.split(None, 5)[-1] if len(line.split(None, 5)) == 6 else None
            return True, f"{m.group(1)}.{m.group(2)}", path
    base = os.path.basename(exe)
    if _PY_EXE.match(base):
        m = _EXE_VERSION.search(base)
        version = f"{m.group(1)}.{m.group(2)}" if m else None
        if version is None:
            # `python3` -> resolve symlink name, else ask nothing: py-spy will tell.
            m = _EXE_VERSION.search(os.path.basename(os.path.realpath(exe)))
            version = f"{m.group(1)}.{m.group(2)}" if m else None
        return True, version, exe
    return False, None, None


def _describe(proc: psutil.Process, followed_from: int | None = None, note: str = "") -> Target:
    try:
        with proc.oneshot():
            comm = proc.name()
            cmdline = tuple(proc.cmdline())
            uid = proc.uids().real
            ctime = proc.create_time()
            try:
                exe = proc.exe()
            except psutil.AccessDenied:
                exe = ""
    except psutil.NoSuchProcess as exc:
        raise TargetError(f"process {proc.pid} exited") from exc
    except psutil.AccessDenied as exc:
        raise PermissionDenied(ptrace_help(proc.pid)) from exc
    is_py, version, elf = _python_identity(proc)
    return Target(
        pid=proc.pid,
        comm=comm,
        exe=exe,
        cmdline=cmdline,
        uid=uid,
        create_time=ctime,
        is_python=is_py,
        python_version=version,
        python_elf=elf,
        followed_from=followed_from,
        note=note,
    )


def _cpu_busy(procs: list[psutil.Process], window: float) -> dict[int, float]:
    """CPU use of each process over ``window`` seconds, in cores."""
    before: dict[int, float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
            before[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    time.sleep(window)
    out: dict[int, float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
            out[p.pid] = (t.user + t.system - before.get(p.pid, 0.0)) / window
        except psutil.Error:
            pass
    return out


def resolve_target(pid: int, follow_children: bool = True) -> Target:
    """Turn the user's PID into the process to capture.

    A PID whose Python children do the work is followed to its busiest Python child, and
    we say so; with ``follow_children=False`` the PID is used as given.
    """
    if pid <= 0:
        raise TargetError(f"{pid} is not a valid PID")
    if pid == os.getpid():
        raise TargetError("refusing to diagnose diagnose itself")
    try:
        proc = psutil.Process(pid)
        status = proc.status()
    except psutil.NoSuchProcess:
        raise TargetError(f"no process with PID {pid} (it may have exited)") from None
    except psutil.AccessDenied as exc:
        raise PermissionDenied(ptrace_help(pid)) from exc
    if status == psutil.STATUS_ZOMBIE:
        raise TargetError(f"process {pid} has exited (zombie, waiting for its parent)")
    tgid = _status_field(pid, "Tgid")
    if tgid and tgid != str(pid):
        raise TargetError(f"{pid} is a thread of process {tgid}; use the process's PID ({tgid})")
    target = _describe(proc)
    if not follow_children:
        return target
    try:
        children = proc.children(recursive=True)
    except psutil.Error:
        children = []
    py_children = []
    for child in children:
        try:
            if _python_identity(child)[0]:
                py_children.append(child)
        except psutil.Error:
            continue
    if not py_children:
        return target
    busy = _cpu_busy([proc, *py_children], 0.3)
    best = max(py_children, key=lambda c: busy.get(c.pid, 0.0))
    own = busy.get(pid, 0.0)
    listing = ", ".join(str(c.pid) for c in py_children[:20])
    if target.is_python and own >= 0.05 and own >= busy.get(best.pid, 0.0):
        # A Python process that does work itself (and happens to have children): keep it.
        return target
    what = "a Python process" if target.is_python else f"a wrapper ({target.comm})"
    note = (
        f"PID {pid} is {what} whose Python child process(es) do the work ({listing}); "
        f"following the busiest, PID {best.pid}" + " (use --no-follow to stay on the PID given)"
    )
    chosen = _describe(best, followed_from=pid, note=note)
    return dataclasses.replace(
        chosen, siblings=tuple(c.pid for c in py_children if c.pid != best.pid)
    )


def _status_field(pid: int, key: str) -> str:
    for line in _read(f"/proc/{pid}/status").splitlines():
        name, sep, value = line.partition(":")
        if sep and name == key:
            return value.strip()
    return ""
