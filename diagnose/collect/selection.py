"""Which processes are the service: the structure of a process tree, not its CPU.

A user gives one PID. It may be the service itself (a threaded server that started a
helper child: a feature store, a tokenizer server, a metrics sidecar), or only a supervisor
whose children do the work: a shell or ``exec`` wrapper, a pre-fork server's master
(gunicorn, uvicorn ``--workers``, hypercorn, celery, torchrun), a ``multiprocessing``
parent whose children run the same program. Comparing CPU use cannot tell these apart: an
I/O-bound service uses little CPU, and a helper child may be the busier one. The tree's
structure can, from facts /proc gives cheaply and without stopping anything
(:class:`ProcInfo`, read by :mod:`diagnose.collect.proctree`).

:func:`select_service` decides, in this order (the first that applies):

1. no children: the PID given is the service;
2. a wrapper (a shell, ``env``, ``nohup``, ``tini``... by executable, or any process whose
   every thread waits for a child to exit, unless it is Python and a child runs its program:
   a multiprocessing parent joining its workers, 9): follow its child, and decide again there;
3. a process that is not Python and is no wrapper: a native service, stay;
4. it holds a listening socket that none of its children shares: it serves itself, stay
   (unless it is torchrun's agent, which listens for its ranks' rendezvous: as in 5);
5. a pre-fork master known by its command (gunicorn, uvicorn, hypercorn, celery, torchrun):
   its workers are the children that share its listening socket or run its program
   (forked, or started by ``multiprocessing``'s spawn);
6. its own threads are in a request path (blocked on TCP connections), or it holds
   connections accepted on its listening socket (a pre-fork master accepts none): stay;
7. children share its listening socket: a pre-fork server's master, as in 5;
8. it neither serves (4-7) nor works (under :data:`PARENT_BUSY_CORES`), runs one thread
   only, and its children all listen, each but one on a port the others' processes connect
   to (a store it started beside the server): a launcher that polls its children instead
   of waiting for them; follow the one the others serve, its dependencies left out;
9. a ``multiprocessing`` parent: the children that run its program are its workers, and
   the parent is kept too when it works itself;
10. otherwise (children that run other programs): stay, the children are helpers.

Children that are never workers: ``multiprocessing``'s resource tracker and fork server,
``torch.compile``'s (inductor) compile workers, processes that are not Python, and
children with a listening socket of their own (a server of their own: a feature store, a
cache, a metrics endpoint). Every child left out is named with the reason.

One capture (one set of collectors) follows one process. Of several workers,
:func:`choose_workers` keeps what ``--workers`` asks for, busiest first: ``all`` (at most
:data:`MAX_WORKERS`; each is captured, the busiest by diagnose itself and the others by
child captures, collect/workers.py), ``busiest`` (:func:`one_process`: that one, the others
named), or a list of PIDs among the workers.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from diagnose.bundle.sections import LeftOut
from diagnose.errors import TargetError
from diagnose.words import count

#: Executables that only start another program (by basename).
WRAPPERS = frozenset(
    {
        "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "env",
        "nohup", "timeout", "setsid", "stdbuf", "nice", "ionice", "taskset", "numactl",
        "chrt", "tini", "tini-static", "dumb-init", "catatonit", "su", "sudo", "runuser",
        "setpriv", "chpst", "s6-setuidgid", "gosu", "su-exec", "xvfb-run", "uv", "poetry",
        "pipenv", "pdm", "hatch", "rye", "conda", "micromamba", "ddtrace-run",
        "opentelemetry-instrument",
    }
)  # fmt: skip
#: Pre-fork servers and process supervisors, by the program or module their master runs.
MASTERS = {
    "gunicorn": "gunicorn",
    "uvicorn": "uvicorn",
    "hypercorn": "hypercorn",
    "celery": "celery",
    "torchrun": "torchrun",
    "torch.distributed.run": "torchrun",
    "torch.distributed.launch": "torchrun",
}
#: Masters whose workers run other command lines and may listen themselves (torchrun's
#: ranks run the training or serving script; rank 0 listens for the others).
EXEC_MASTERS = frozenset({"torchrun"})

_SPAWNED = "--multiprocessing-fork"  # multiprocessing's spawn and forkserver children
_NOT_WORKERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"multiprocessing\.(resource|semaphore)_tracker"), "multiprocessing's resource tracker"),
    (re.compile(r"multiprocessing\.forkserver import main"), "multiprocessing's fork server"),
    (re.compile(r"_inductor[./]compile_worker"), "a torch.compile (inductor) compile worker"),
)  # fmt: skip


@dataclass(frozen=True)
class ProcInfo:
    """One process as selection sees it: facts /proc gives without stopping it."""

    pid: int
    comm: str
    exe: str  # path of the executable ("" when not readable)
    cmdline: tuple[str, ...]
    is_python: bool
    threads: int = 1
    #: inodes of the listening sockets (TCP, Unix stream) it holds a descriptor of
    listening: frozenset[int] = frozenset()
    ports: tuple[str, ...] = ()  # their local addresses, for people ("127.0.0.1:8000")
    #: threads blocked on a TCP connection: receiving, sending, accepting, connecting
    request_threads: int = 0
    #: TCP connections it holds on the port of its own listening socket (it accepted them)
    accepted: int = 0
    #: every thread is blocked waiting for a child to exit (wait4/waitid): a wrapper
    waits_for_child: bool = False
    #: peers ("127.0.0.1:9000") of the TCP connections it opened
    connects_to: frozenset[str] = frozenset()
    cpu_cores: float | None = None  # CPU it used over the selection's short window
    children: tuple[ProcInfo, ...] = ()

    def label(self) -> str:
        return f"{self.pid} ({self.comm})"


@dataclass(frozen=True)
class Selection:
    """The service's processes, how they were found, and who was left out and why."""

    kind: str  # "service" | "wrapper" | "prefork" | "multiprocessing"
    workers: tuple[ProcInfo, ...]  # the processes to capture, in PID order
    why: str  # one sentence for the terminal, the manifest and the report
    left_out: tuple[LeftOut, ...] = ()
    followed: tuple[int, ...] = ()  # PIDs passed through: wrappers, the master
    master: ProcInfo | None = None  # the supervisor whose workers these are

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(w.pid for w in self.workers)


# --- what a process is ----------------------------------------------------------------------


def master_kind(p: ProcInfo) -> str:
    """'gunicorn', 'uvicorn', ... when ``p`` runs a known pre-fork server or supervisor."""
    argv = p.cmdline
    if argv and argv[0].startswith("gunicorn: master"):  # setproctitle's form
        return "gunicorn"
    words = list(argv[:1])
    if p.is_python:  # python [-opts] (-m MODULE | SCRIPT)
        rest = argv[1:]
        for i, a in enumerate(rest):
            if a == "-m" and i + 1 < len(rest):
                words.append(rest[i + 1])
                break
            if a == "-c":
                break
            if not a.startswith("-"):
                words.append(a)
                break
    for w in words:
        name = os.path.basename(w)
        if name in MASTERS:
            return MASTERS[name]
    return ""


def is_wrapper(p: ProcInfo) -> bool:
    base = os.path.basename(p.exe) or p.comm
    if not p.is_python and base in WRAPPERS:
        return True
    # a Python parent joining children that run its own program is their multiprocessing
    # parent (rule 9), not a launcher: it waits for its workers, not for the program it ran
    own = p.is_python and any(runs_program_of(c, p) for c in p.children)
    return p.waits_for_child and not p.listening and not own


def not_worker_reason(child: ProcInfo) -> str:
    """Why ``child`` can never be the service's worker ('' when it can be)."""
    text = " ".join(child.cmdline)
    for pattern, what in _NOT_WORKERS:
        if pattern.search(text):
            return what
    if not child.is_python and not child.children:
        return "not a Python process"
    return ""


def runs_program_of(child: ProcInfo, parent: ProcInfo) -> bool:
    """``child`` runs ``parent``'s program: forked from it (the same executable and command
    line, or gunicorn's worker title), or started by multiprocessing's spawn/forkserver."""
    if child.cmdline and child.cmdline[0].startswith("gunicorn: worker"):
        return True
    same_exe = not child.exe or not parent.exe or child.exe == parent.exe
    return same_exe and (child.cmdline == parent.cmdline or _SPAWNED in child.cmdline)


# --- the decision ---------------------------------------------------------------------------


def select_service(root: ProcInfo) -> Selection:
    """The service's processes in the tree under ``root`` (see the module's doc)."""
    return _select(root, ())


def _stay(root: ProcInfo, why: str, via: tuple[int, ...], left: list[LeftOut]) -> Selection:
    kind = "service" if not via else "wrapper"
    return Selection(kind, (root,), why, tuple(left), via)


def _select(root: ProcInfo, via: tuple[int, ...]) -> Selection:
    children = list(root.children)
    if not children:
        return _stay(root, f"PID {root.pid} has no child processes", via, [])
    left: list[LeftOut] = []
    candidates: list[ProcInfo] = []
    for c in children:
        reason = not_worker_reason(c)
        if reason:
            left.append(LeftOut(c.pid, c.comm, reason))
        else:
            candidates.append(c)

    if is_wrapper(root):
        return _through_wrapper(root, candidates, left, via)
    if not root.is_python:
        why = (
            f"PID {root.pid} ({root.comm}) is not a Python process nor a wrapper: a native "
            "service; its children are helpers"
        )
        return _stay(root, why, via, _all_left(children, "a child of the native service"))
    # children serving the root's sockets (a worker serves no port of its own)
    shared = {
        c.pid for c in candidates if c.listening & root.listening and c.listening <= root.listening
    }
    master = master_kind(root)
    if master in EXEC_MASTERS:  # torchrun's agent listens itself (the rendezvous store)
        return _prefork(root, master, candidates, shared, left, via)
    if root.listening and not shared:
        why = (
            f"PID {root.pid} serves requests itself (listening on "
            f"{_ports(root)}, which none of its children shares); its children are helpers"
        )
        return _stay(root, why, via, left + _helpers(candidates))
    if master:
        return _prefork(root, master, candidates, shared, left, via)
    if root.request_threads or root.accepted:
        how = []
        if root.request_threads:
            how.append(f"{root.request_threads} of its threads are in TCP connections")
        if root.accepted:
            how.append(f"it holds {root.accepted} connection(s) accepted on {_ports(root)}")
        why = f"PID {root.pid} serves requests itself ({'; '.join(how)}); its children are helpers"
        return _stay(root, why, via, left + _helpers(candidates))
    if shared:
        return _prefork(root, "", candidates, shared, left, via)
    return _multiprocessing(root, candidates, left, via)


def _through_wrapper(
    root: ProcInfo, candidates: list[ProcInfo], left: list[LeftOut], via: tuple[int, ...]
) -> Selection:
    what = f"PID {root.pid} ({root.comm}) is a wrapper"
    if len(candidates) == 1:
        inner = _select(candidates[0], (*via, root.pid))
        why = f"{what}; {inner.why}"
        return replace(inner, why=why, left_out=tuple(left) + inner.left_out)
    if not candidates:
        return _stay(root, f"{what} without a Python child", via, left)
    first = candidates[0]
    if all(runs_program_of(c, first) or c.cmdline == first.cmdline for c in candidates[1:]):
        why = f"{what} of {count(len(candidates), 'process')} that run the same program"
        return Selection("wrapper", tuple(candidates), why, tuple(left), (*via, root.pid))
    listing = "; ".join(f"{c.pid} {' '.join(c.cmdline)[:80]}" for c in candidates[:8])
    raise TargetError(
        f"{what} whose children run different programs ({listing}): attach to the one to diagnose"
    )


def _prefork(
    root: ProcInfo,
    master: str,
    candidates: list[ProcInfo],
    shared: set[int],
    left: list[LeftOut],
    via: tuple[int, ...],
) -> Selection:
    workers: list[ProcInfo] = []
    for c in candidates:
        own = c.listening - root.listening
        if master in EXEC_MASTERS and c.is_python:
            workers.append(c)
        elif own:  # a worker serves its master's sockets, not ports of its own
            left.append(LeftOut(c.pid, c.comm, f"a server of its own (listening on {_ports(c)})"))
        elif c.pid in shared:
            workers.append(c)
        elif c.listening:
            left.append(LeftOut(c.pid, c.comm, f"a server of its own (listening on {_ports(c)})"))
        elif root.listening:
            left.append(LeftOut(c.pid, c.comm, "does not share the master's listening socket"))
        elif runs_program_of(c, root):
            workers.append(c)
        else:
            left.append(LeftOut(c.pid, c.comm, "runs another program (a helper)"))
    name = f"a {master} master" if master else "a pre-fork server's master"
    what = f"PID {root.pid} is {name}"
    if root.listening:
        what += f" (listening on {_ports(root)}, shared by its workers)"
    if not workers:
        return _stay(root, f"{what} without workers: staying on the master", via, left)
    why = f"{what}, with {_count(workers, 'worker')}"
    return Selection("prefork", tuple(workers), why, tuple(left), (*via, root.pid), root)


def _multiprocessing(
    root: ProcInfo, candidates: list[ProcInfo], left: list[LeftOut], via: tuple[int, ...]
) -> Selection:
    idle = root.cpu_cores is not None and root.cpu_cores < PARENT_BUSY_CORES
    front, deps = _front_server(candidates)
    if idle and root.threads <= 1 and front is not None:
        # it neither serves (no socket, no thread on TCP) nor works, and has no thread
        # besides the one that polls its children (threads that wait on anything are a
        # service's); one child serves, and the others serve only it: a launcher
        inner = _select(front, (*via, root.pid))
        one = "whose one child serves" if not deps else f"whose child {front.pid} serves"
        why = (
            f"PID {root.pid} is a launcher (no listening socket, no thread on TCP, "
            f"{root.cpu_cores:.2f} cores) {one}; {inner.why}"
        )
        left += [
            LeftOut(d.pid, d.comm, f"a dependency of {front.pid} (listening on {_ports(d)})")
            for d in deps
        ]
        kind = "wrapper" if inner.kind == "service" else inner.kind
        return replace(inner, kind=kind, why=why, left_out=tuple(left) + inner.left_out)
    workers: list[ProcInfo] = []
    helpers: list[ProcInfo] = []
    for c in candidates:
        if c.listening:
            left.append(LeftOut(c.pid, c.comm, f"a server of its own (listening on {_ports(c)})"))
        elif runs_program_of(c, root):
            workers.append(c)
        else:
            helpers.append(c)
    left += _helpers(helpers)
    if not workers:
        why = f"PID {root.pid} is the service; its children run other programs (helpers)"
        return _stay(root, why, via, left)
    what = f"PID {root.pid} is a multiprocessing parent whose children run its program"
    if root.cpu_cores is not None and root.cpu_cores >= PARENT_BUSY_CORES:
        why = f"{what}; it works itself ({root.cpu_cores:.2f} cores): it and its {_count(workers, 'worker')} are the service"
        return Selection("multiprocessing", (root, *workers), why, tuple(left), via, root)
    why = f"{what}, with {_count(workers, 'worker')}"
    return Selection("multiprocessing", tuple(workers), why, tuple(left), (*via, root.pid), root)


def _front_server(candidates: list[ProcInfo]) -> tuple[ProcInfo | None, list[ProcInfo]]:
    """Of children that all listen, the one the others serve: each other child's port is one
    that child's processes connect to (a store, a cache it started beside the service).
    (None, []) unless exactly one is left."""
    if not candidates or not all(c.listening for c in candidates):
        return None, []
    deps = [
        d
        for d in candidates
        if any(_port_set(d) & _peer_ports(c) for c in candidates if c is not d)
    ]
    front = [c for c in candidates if c not in deps]
    return (front[0], deps) if len(front) == 1 else (None, [])


def _port_set(p: ProcInfo) -> set[str]:
    return {a.rsplit(":", 1)[-1] for a in p.ports if ":" in a}


def _peer_ports(p: ProcInfo) -> set[str]:
    """The ports ``p`` and its descendants connect to."""
    out = {a.rsplit(":", 1)[-1] for a in p.connects_to}
    for c in p.children:
        out |= _peer_ports(c)
    return out


#: how a worker left out of the capture (but of the service) is named: its sibling
OTHER_WORKER = "another worker of the service"

#: A multiprocessing parent using this much CPU over the selection window works itself
#: (it is captured with its workers): a supervisor's own CPU is near zero (gunicorn's and
#: uvicorn's masters used under 0.01 core here, serving 2 workers under load).
PARENT_BUSY_CORES = 0.2


def _helpers(children: list[ProcInfo]) -> list[LeftOut]:
    out = []
    for c in children:
        if c.listening:
            out.append(LeftOut(c.pid, c.comm, f"a helper (a server of its own on {_ports(c)})"))
        else:
            out.append(LeftOut(c.pid, c.comm, "a helper of the service"))
    return out


def _all_left(children: list[ProcInfo], why: str) -> list[LeftOut]:
    return [LeftOut(c.pid, c.comm, not_worker_reason(c) or why) for c in children]


def _ports(p: ProcInfo) -> str:
    return ", ".join(p.ports[:3]) if p.ports else "a socket"


def _count(items: list[ProcInfo], noun: str) -> str:
    pids = ", ".join(str(p.pid) for p in items[:8]) + (", ..." if len(items) > 8 else "")
    return f"{count(len(items), noun)} ({pids})"


# --- which workers ----------------------------------------------------------------------------

#: ``--workers all`` captures at most this many workers at once (the busiest): each is a
#: capture of its own (py-spy, perf), and the CPU budget is shared among them
MAX_WORKERS = 4


def parse_workers(text: str) -> str | tuple[int, ...]:
    """``--workers``: "all", "busiest", or PIDs separated by commas. Raises ValueError with
    the message for the user."""
    text = text.strip().lower()
    if text in ("all", "busiest"):
        return text
    pids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) <= 0:
            raise ValueError(
                f"--workers takes all, busiest or PIDs separated by commas, not {text!r}"
            )
        pids.append(int(part))
    return tuple(dict.fromkeys(pids))


def choose_workers(sel: Selection, mode: str | tuple[int, ...] = "all") -> Selection:
    """The workers to capture, busiest first (the first is diagnose's own capture, the
    others are captured beside it): ``all`` (the :data:`MAX_WORKERS` busiest), ``busiest``
    (:func:`one_process`), or the PIDs given, which must be workers of the service
    (TargetError otherwise). Every worker not captured is left out and named."""
    if mode == "busiest" or (len(sel.workers) <= 1 and mode == "all"):
        return one_process(sel)
    ranked = sorted(sel.workers, key=lambda w: (-(w.cpu_cores or 0.0), w.pid))
    if mode == "all":
        keep = ranked[:MAX_WORKERS]
        why_not = f"another worker, beyond the {MAX_WORKERS} busiest that --workers all captures"
    else:
        known = {w.pid for w in sel.workers}
        unknown = [p for p in mode if p not in known]
        if unknown:
            pids = ", ".join(str(w.pid) for w in sel.workers)
            raise TargetError(
                f"--workers: PID {unknown[0]} is not a worker of this service (its workers: {pids})"
            )
        keep = [w for w in ranked if w.pid in mode]
        why_not = f"{OTHER_WORKER}, not among --workers"
    left = list(sel.left_out)
    left += [LeftOut(w.pid, w.comm, why_not) for w in ranked if w not in keep]
    if len(keep) == 1:
        why = f"{sel.why}; capturing PID {keep[0].pid} (--workers)"
    else:
        why = f"{sel.why}; capturing {_count(keep, 'worker')} at once, one capture each"
    followed = tuple(p for p in sel.followed if p not in {w.pid for w in keep})
    return replace(sel, workers=tuple(keep), left_out=tuple(left), why=why, followed=followed)


# --- one process ------------------------------------------------------------------------------


def one_process(sel: Selection) -> Selection:
    """The process a capture covers (the collectors follow one PID): of several workers the
    structure found, the busiest over the selection's window; the others are left out and
    named. CPU only chooses among processes the structure already made workers of one
    service (they run one program), never whether a process is the service."""
    if len(sel.workers) <= 1:
        return sel
    best = max(sel.workers, key=lambda w: (w.cpu_cores or 0.0, -w.pid))
    left = list(sel.left_out)
    for w in sel.workers:
        if w is not best:
            why = f"{OTHER_WORKER}, less busy (a capture covers one process)"
            left.append(LeftOut(w.pid, w.comm, why))
    cores = f" ({best.cpu_cores:.2f} cores over 0.3 s)" if best.cpu_cores is not None else ""
    why = f"{sel.why}; following the busiest, PID {best.pid}{cores}"
    followed = sel.followed
    if sel.master is not None and best.pid == sel.master.pid:
        followed = tuple(p for p in followed if p != best.pid)
    return replace(sel, workers=(best,), left_out=tuple(left), why=why, followed=followed)
