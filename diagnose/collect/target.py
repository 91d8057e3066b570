"""Finding the processes to diagnose: does the PID exist, may we trace it, is it Python, and
is it the service itself or only a supervisor (a shell, a gunicorn/uvicorn master) whose
children do the work? The decision is :mod:`diagnose.collect.selection`'s, from the process
tree's structure (:mod:`diagnose.collect.proctree`)."""

from __future__ import annotations

import dataclasses
import errno
import os
from dataclasses import dataclass, field

import psutil

from diagnose.bundle.sections import LeftOut
from diagnose.collect.proctree import python_identity, read_tree
from diagnose.collect.selection import OTHER_WORKER, Selection, choose_workers, select_service
from diagnose.collect.tasks import read_proc
from diagnose.errors import PermissionDenied, TargetError


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
    # the service's other processes (PIDs): those left out, and the workers captured beside
    siblings: tuple[int, ...] = field(default_factory=tuple)
    left_out: tuple[LeftOut, ...] = field(default_factory=tuple)  # and why, for people
    selection: str = ""  # how it was chosen: selection.Selection.kind ("" with --no-follow)
    #: the service's other workers captured beside it (--workers), busiest first
    also: tuple[int, ...] = field(default_factory=tuple)

    def alive(self) -> bool:
        try:
            p = psutil.Process(self.pid)
            return p.create_time() == self.create_time and p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def ptrace_help(pid: int) -> str:
    scope = read_proc("/proc/sys/kernel/yama/ptrace_scope").strip()
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


def _describe(proc: psutil.Process) -> Target:
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
    is_py, version, elf = python_identity(proc.pid, exe)
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
    )


def resolve_target(
    pid: int, follow_children: bool = True, workers: str | tuple[int, ...] = "busiest"
) -> Target:
    """Turn the user's PID into the process to capture (see collect/selection.py).

    The PID given is kept when it is the service itself, whatever helper children it has;
    a supervisor (a wrapper, a pre-fork master, a multiprocessing parent) is followed to its
    workers: ``workers`` says which (:func:`~diagnose.collect.selection.choose_workers`);
    the busiest is the target, the others are in ``also``. The note says which processes
    and why, and names who was left out and why; ``follow_children=False`` uses the PID as
    given.
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
    if not follow_children:
        return _describe(proc)
    try:
        tree = read_tree(pid)
    except psutil.NoSuchProcess:
        raise TargetError(f"no process with PID {pid} (it may have exited)") from None
    except psutil.AccessDenied as exc:
        raise PermissionDenied(ptrace_help(pid)) from exc
    return _from_selection(pid, choose_workers(select_service(tree), workers))


#: At most this many of the processes left out are named in the note (all are in the
#: manifest's ``target.left_out``).
NOTE_LEFT_OUT = 6


def selection_note(pid: int, chosen: int, sel: Selection) -> str:
    """One paragraph for the terminal and the reports: which process, why, who was left out
    and why ('' when the PID given has no children: nothing was decided)."""
    if chosen == pid and not sel.left_out:
        return ""
    note = sel.why
    if chosen != pid:
        if "following the busiest" not in note and "capturing" not in note:
            note += f"; following PID {chosen}"
        note += " (--no-follow stays on the PID given)"
    if sel.left_out:
        shown = "; ".join(f"{x.pid} ({x.comm}): {x.why}" for x in sel.left_out[:NOTE_LEFT_OUT])
        more = len(sel.left_out) - NOTE_LEFT_OUT
        note += f". Left out: {shown}" + (f"; and {more} more" if more > 0 else "")
    return note


def _from_selection(pid: int, sel: Selection) -> Target:
    """The Target of ``sel``'s process, with the note and who was left out."""
    chosen = sel.workers[0].pid
    try:
        target = _describe(psutil.Process(chosen))
    except psutil.NoSuchProcess:
        raise TargetError(f"PID {chosen}, chosen under PID {pid}, exited ({sel.why})") from None
    return dataclasses.replace(
        target,
        followed_from=pid if chosen != pid else None,
        note=selection_note(pid, chosen, sel),
        # the service's other workers, not its helpers (a store, multiprocessing's tracker)
        siblings=tuple(x.pid for x in sel.left_out if x.why.startswith(OTHER_WORKER))
        + tuple(w.pid for w in sel.workers[1:]),
        left_out=sel.left_out,
        selection=sel.kind,
        also=tuple(w.pid for w in sel.workers[1:]),
    )


def _status_field(pid: int, key: str) -> str:
    for line in read_proc(f"/proc/{pid}/status").splitlines():
        name, sep, value = line.partition(":")
        if sep and name == key:
            return value.strip()
    return ""
