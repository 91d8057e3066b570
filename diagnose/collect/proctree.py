"""Reading a process tree from /proc for target selection (:mod:`diagnose.collect.selection`).

Only what /proc gives without stopping or tracing anything: command lines, executables,
which descriptors are listening sockets (``/proc/PID/fd`` against ``/proc/PID/net/tcp``,
``tcp6`` and ``unix``), each thread's wait channel, and CPU time over a short window.
Bounded: at most :data:`MAX_PROCESSES` processes, :data:`MAX_DEPTH` levels below the PID
given and :data:`MAX_FDS` descriptors a process are read.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable

import psutil

from diagnose.collect.selection import ProcInfo
from diagnose.collect.sockwait import WaitedSockets, socket_descriptors, tcp_table
from diagnose.collect.tasks import read_proc, read_task, schedstats, task_ids

MAX_PROCESSES = 256
MAX_DEPTH = 4
MAX_FDS = 16384
#: CPU use is compared over this window (only for --workers busiest, the order of workers
#: and their bound, and whether a multiprocessing parent works itself; never to decide what
#: is a worker), by each thread's time on a CPU in nanoseconds (``schedstat``); where the
#: kernel gives none, by its CPU time in clock ticks (10 ms) over :data:`TICK_WINDOW_S`.
#: The window is waited out before the capture starts: 0.3 s of every time to verdict of a
#: service of several processes, before ticks were replaced by nanoseconds
CPU_WINDOW_S = 0.12
TICK_WINDOW_S = 0.3

#: Wait channels of a thread blocked on a TCP connection: receiving, sending, accepting
#: on a listening socket, connecting. Unix sockets and pipes (multiprocessing's channels
#: to its children) have others (unix_stream_read_generic, pipe_read).
TCP_WAITS = frozenset(
    {"sk_wait_data", "sk_stream_wait_memory", "inet_csk_accept", "inet_wait_for_connect",
     "sk_stream_wait_connect", "tcp_recvmsg", "tcp_recvmsg_locked"}
)  # fmt: skip
#: The wait channel of wait4()/waitid(): waiting for a child to exit.
CHILD_WAIT = "do_wait"

_PY_EXE = re.compile(r"^python(\d(\.\d+)?)?[dmu]*$")
_LIBPY = re.compile(r"libpython(\d)\.(\d+)[a-z]*\.so")
_EXE_VERSION = re.compile(r"python(\d)\.(\d+)")
_UNIX_LISTENING = 0x10000  # __SO_ACCEPTCON in /proc/net/unix's Flags


def python_identity(pid: int, exe: str) -> tuple[bool, str | None, str | None]:
    """(is it Python, version "3.x" if named, path of the ELF holding the interpreter)."""
    for line in read_proc(f"/proc/{pid}/maps").splitlines():
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


def _tcp_address(hex_addr: str) -> str:
    """'0100007F:1F90' -> '127.0.0.1:8080' (IPv6 in brackets)."""
    host, _, port = hex_addr.partition(":")
    try:
        raw = bytes.fromhex(host)
        if len(raw) == 4:
            ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
        else:  # four 32-bit words, each in host byte order
            words = struct.unpack("<4I", raw)
            ip = "[" + socket.inet_ntop(socket.AF_INET6, struct.pack(">4I", *words)) + "]"
        return f"{ip}:{int(port, 16)}"
    except (ValueError, OSError, struct.error):
        return hex_addr


def tcp_sockets(pid: int) -> dict[int, tuple[str, int]]:
    """Inode -> (state, local port) of every TCP socket in ``pid``'s network namespace
    (state as /proc/net/tcp writes it: '01' established, '0A' listening)."""
    return {i: (state, port) for i, (state, port, _) in tcp_table(pid).items()}


def accepted_connections(pid: int, sockets: set[int], held: list[int]) -> int:
    """Established TCP connections ``pid`` holds on the port of a listening socket it holds
    itself: connections it accepted (an outbound one has an ephemeral local port)."""
    if not held:
        return 0
    table = tcp_sockets(pid)
    ports = {table[i][1] for i in held if i in table}
    return sum(1 for i in sockets if i in table and table[i][0] == "01" and table[i][1] in ports)


def listening_sockets(pid: int) -> dict[int, str]:
    """Inode -> local address of every listening socket in ``pid``'s network namespace."""
    out: dict[int, str] = {}
    for name in ("tcp", "tcp6"):
        for line in read_proc(f"/proc/{pid}/net/{name}").splitlines()[1:]:
            f = line.split()
            if len(f) > 9 and f[3] == "0A":  # TCP_LISTEN
                with contextlib.suppress(ValueError):
                    out[int(f[9])] = _tcp_address(f[1])
    for line in read_proc(f"/proc/{pid}/net/unix").splitlines()[1:]:
        f = line.split()
        with contextlib.suppress(ValueError, IndexError):
            if int(f[3], 16) & _UNIX_LISTENING:
                out[int(f[6])] = f"unix:{f[7]}" if len(f) > 7 else "unix:(unnamed)"
    return out


#: at most this many peers are kept, the most used first
MAX_PEERS = 10


def outbound_peers(pid: int) -> list[dict[str, object]] | None:
    """The peers of ``pid``'s outbound TCP connections, now: established sockets it holds
    whose local port is not one it listens on (a connection it accepted has its listening
    port; one it opened, an ephemeral port), by peer address, with the number of its
    threads blocked in a system call on one of them (reading it, or polling a set that holds
    it: collect/sockwait.py). At most :data:`MAX_PEERS`, the most
    waited on first. None: its descriptors could not be read (it exited, or no access)."""
    if not os.access(f"/proc/{pid}/fd", os.R_OK | os.X_OK):
        return None
    peer_of = outbound_sockets(pid, socket_inodes(pid))
    if not peer_of:
        return []
    sockets = Counter(peer_of.values())
    waiting: Counter[str] = Counter()
    waits = WaitedSockets(pid)
    for tid in task_ids(pid):  # recv on one, or poll/select/epoll over several
        peers = {peer_of[i] for i in waits.inodes(read_task(pid, tid, "syscall")) if i in peer_of}
        waiting.update(peers)
    ranked = sorted(sockets, key=lambda a: (-waiting.get(a, 0), -sockets[a], a))
    return [
        {"peer": a, "connections": sockets[a], "threads_waiting": waiting.get(a, 0)}
        for a in ranked[:MAX_PEERS]
    ]


def outbound_sockets(pid: int, held: set[int]) -> dict[int, str]:
    """Socket inode -> peer address of the established TCP connections ``pid`` opened: those
    of ``held`` whose local port is not one it listens on (an accepted one has that port)."""
    table = tcp_table(pid)
    listening = {table[i][1] for i in held if i in table and table[i][0] == "0A"}
    return {
        i: _tcp_address(table[i][2])
        for i in held
        if i in table and table[i][0] == "01" and table[i][1] not in listening
    }


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets ``pid`` holds descriptors of (the first MAX_FDS descriptors)."""
    return set(socket_descriptors(pid).values())


def thread_waits(pid: int) -> list[str]:
    """The wait channel of each thread ('0' or '' when running)."""
    return [read_task(pid, tid, "wchan").strip() for tid in task_ids(pid)]


def request_threads(pid: int) -> int:
    """Threads blocked on a TCP connection: a TCP wait channel, or a system call on a TCP
    socket (reading it, or polling a set that holds it: collect/sockwait.py)."""
    waits: WaitedSockets | None = None
    n = 0
    for tid in task_ids(pid):
        wchan = read_task(pid, tid, "wchan").strip()
        if wchan in TCP_WAITS:
            n += 1
        elif wchan and wchan != "0":
            waits = waits or WaitedSockets(pid)
            n += waits.direction(read_task(pid, tid, "syscall")) != ""
    return n


def _cpu_s(proc: psutil.Process) -> float | None:
    try:
        t = proc.cpu_times()
    except psutil.Error:
        return None
    return float(t.user + t.system)


def run_time_s(pid: int) -> float | None:
    """Seconds ``pid``'s threads have spent on a CPU, from their ``schedstat`` (nanoseconds),
    or None where the kernel gives none. A thread that exits between two readings takes its
    time with it: a difference can come out lower than the truth (never below 0 once
    clamped)."""
    times = schedstats(pid)
    return sum(on for on, _, _ in times.values()) / 1e9 if times else None


def cpu_use(procs: dict[int, psutil.Process], window: float) -> dict[int, float | None]:
    """Each process's cores over about ``window`` seconds (:data:`CPU_WINDOW_S`), divided by
    the time really elapsed between the readings; None for one that could not be read."""
    read: Callable[[int], float | None] = run_time_s
    if run_time_s(os.getpid()) is None:  # no schedstat: clock ticks, over a window they fill
        window = max(window, TICK_WINDOW_S)

        def read(p: int) -> float | None:
            return _cpu_s(procs[p])

    before = {p: read(p) for p in procs}
    t = time.monotonic()
    time.sleep(window)
    after = {p: read(p) for p in procs}
    elapsed = max(time.monotonic() - t, 1e-3)
    return {
        p: None if now is None or then is None else max(0.0, now - then) / elapsed
        for p, then, now in ((p, before[p], after[p]) for p in procs)
    }


def read_tree(pid: int, cpu_window: float = CPU_WINDOW_S) -> ProcInfo:
    """``pid`` and the processes under it, as :class:`ProcInfo`. Raises psutil's errors
    for ``pid`` itself (the caller turns them into one-line messages)."""
    root = psutil.Process(pid)
    procs: dict[int, psutil.Process] = {pid: root}
    kids: dict[int, list[int]] = {pid: []}
    frontier = [(root, 0)]
    while frontier and len(procs) < MAX_PROCESSES:
        proc, depth = frontier.pop(0)
        if depth >= MAX_DEPTH:
            continue
        try:
            children = proc.children()
        except psutil.Error:
            continue
        for c in sorted(children, key=lambda p: p.pid):
            if len(procs) >= MAX_PROCESSES:
                break
            procs[c.pid] = c
            kids.setdefault(proc.pid, []).append(c.pid)
            kids.setdefault(c.pid, [])
            frontier.append((c, depth + 1))
    cpu: dict[int, float | None] = {}
    if len(procs) > 1 and cpu_window > 0:
        cpu = cpu_use(procs, cpu_window)
    listening = listening_sockets(pid)

    def info(p: int) -> ProcInfo:
        return describe(procs[p], listening, cpu.get(p), tuple(info(c) for c in kids[p]))

    return info(pid)


def describe(
    proc: psutil.Process,
    listening: dict[int, str],
    cpu_cores: float | None = None,
    children: tuple[ProcInfo, ...] = (),
) -> ProcInfo:
    """One process as selection sees it (a process that vanished meanwhile: empty facts)."""
    pid = proc.pid
    try:
        with proc.oneshot():
            comm, cmdline, threads = proc.name(), tuple(proc.cmdline()), proc.num_threads()
            try:
                exe = proc.exe()
            except psutil.AccessDenied:
                exe = ""
    except psutil.Error:
        comm, cmdline, threads, exe = "?", (), 0, ""
    sockets = socket_inodes(pid)
    held = sorted(i for i in sockets if i in listening)
    waits = thread_waits(pid)
    return ProcInfo(
        pid=pid,
        comm=comm,
        exe=exe,
        cmdline=cmdline,
        is_python=python_identity(pid, exe)[0],
        threads=threads,
        listening=frozenset(held),
        ports=tuple(dict.fromkeys(listening[i] for i in held)),
        request_threads=request_threads(pid),
        accepted=accepted_connections(pid, sockets, held),
        connects_to=frozenset(outbound_sockets(pid, sockets).values()),
        waits_for_child=bool(waits) and all(w == CHILD_WAIT for w in waits),
        cpu_cores=None if cpu_cores is None else round(cpu_cores, 3),
        children=children,
    )
