"""Which sockets a blocked thread waits on, and which way they face.

A thread blocked in ``recv``/``read`` names its descriptor in its first argument; one blocked
in ``poll``/``select``/``epoll_wait`` (a socket with a timeout, an HTTP client, an event
loop) names a list of them in memory: ``poll``'s ``pollfd`` array, ``select``'s read bitmap,
the descriptors an epoll instance watches (``/proc/PID/fdinfo``). Each descriptor that is a
TCP socket faces one of two ways:

- **in**: its local port is one the process listens on: a connection it accepted, its own
  client (waiting on it is waiting for work);
- **out**: an established connection from an ephemeral port: a dependency it called.

A pipe the process reads faces **in** when every process that holds its writing end is
outside the process and its descendants (stdin fed by a producer, a pool worker's task
pipe from its master): that is the process's input, and waiting on it is waiting for work.
A pipe its own child writes, or it writes itself, says nothing here (the frames decide).

The kernel says this, whatever the code's names. Reading the arrays needs ``/proc/PID/mem``
(ptrace rights, which the capture has); nothing here stops the target.

An event loop polls both at once. It waits for a dependency, not for work, while one of
the outbound connections it polls is awaiting a reply (collect/tcpinfo.py: it sent more
recently than it received): **loop**, a dependency wait of a thread that is free to take
other work meanwhile (a thread blocked on the dependency alone is not); where the kernel's
socket times cannot be read, such a wait stays "in".
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import struct
import time
from typing import NamedTuple

from diagnose.collect import tcpinfo
from diagnose.collect.tasks import read_proc
from diagnose.formats.syscalls import IO_CALLS, TABLES

#: descriptors read from one poll array or select bitmap, at most
MAX_POLLED = 256
#: descriptors of a process read, at most
MAX_FDS = 16384
#: the kernel's socket times are read again at most this often (a lookup per socket)
ACTIVITY_MAX_AGE_S = 0.2
#: an accepted connection that received data this recently is a client with traffic
CLIENT_ACTIVE_MS = 1000
#: sockets whose times are read at a time, at most (a lookup each, dependencies first)
MAX_LOOKUPS = 64
#: processes scanned for the writers of the pipes a process reads, at most
MAX_PROCS = 4096
#: that scan reads every process's descriptors: new pipes wait for the next one this long,
#: and one stops after this long (its pipes then say nothing, as before the scan)
PIPE_SCAN_EVERY_S = 5.0
PIPE_SCAN_MAX_S = 0.1
#: TCP states as /proc/net/tcp writes them
ESTABLISHED, LISTEN = "01", "0A"
SETUP = ("02", "03")  # SYN_SENT, SYN_RECV


def _numbers(machine: str) -> tuple[frozenset[int], dict[str, int]]:
    table = TABLES.get(machine, {})
    return frozenset(table[n] for n in IO_CALLS if n in table), dict(table)


class WaitedSockets:
    """For one process: the direction of the sockets its blocked threads wait on. The TCP
    table and the process's descriptors are read again only on :meth:`refresh`."""

    def __init__(self, pid: int, machine: str | None = None, max_age: float = 0.0) -> None:
        self.pid = pid
        self.io, self.calls = _numbers(machine or platform.machine())
        waits = ("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2")
        self.candidates = self.io | {self.calls[n] for n in waits if n in self.calls}
        self.max_age = max_age
        # descriptor -> socket inode, or minus the inode of a pipe it reads
        self._inode_of: dict[int, int] = {}
        self._pipe_way: dict[int, str] = {}  # minus pipe inode -> "in" | "" (kept: writers stay)
        self._pipes_at = -PIPE_SCAN_EVERY_S
        self._way: dict[int, str] = {}  # socket inode -> "in" | "out"
        self._seen: dict[tuple[int, str], str] = {}  # (tid, syscall text) -> direction
        self._read_at = 0.0
        #: why the kernel's socket times cannot be read ('' where they can)
        self.activity_unavailable = tcpinfo.unavailable(pid)
        self._activity: dict[int, tcpinfo.Activity] = {}
        self._activity_at = -1.0
        self._ids: dict[int, tuple[int, bytes]] = {}  # inode -> (family, netlink socket id)
        # socket inode -> the least lead (tcpinfo.Activity.lead) seen at rest, and awaiting
        self._rest_lead: dict[int, int] = {}
        self._await_lead: dict[int, int] = {}
        # socket inode -> its TCP row, for the sockets held at the last read of the table;
        # sockets in _settled were seen there (or are not TCP): their direction is known
        self._rows: dict[int, TcpRow] = {}
        self._settled: set[int] = set()
        #: reads of the TCP table (a namespace's table can hold thousands of TIME_WAIT rows)
        self.table_reads = 0
        self.refresh()

    def refresh(self) -> None:
        """Read the process's sockets and its network namespace's TCP table again."""
        self._read_at = time.monotonic()
        self._seen.clear()
        self._inode_of, pipes = _descriptors(self.pid)
        new = {i for i in pipes.values() if i not in self._pipe_way}
        if new and self._read_at - self._pipes_at > PIPE_SCAN_EVERY_S:
            self._pipes_at = self._read_at
            self._pipe_way.update(_pipe_ways(self.pid, new))
        self._inode_of.update(pipes)
        held = set(self._inode_of.values())
        sockets = {i for i in held if i > 0}
        if sockets - self._settled:  # a socket opened since: read the table again
            self.table_reads += 1
            self._rows = {r.inode: r for r in self._table(sockets) if r.inode in sockets}
            # a connection still being set up is looked up again at the next read
            self._settled = {
                i for i in sockets if i not in self._rows or self._rows[i].state not in SETUP
            }
        rows = [r for i, r in self._rows.items() if i in held]
        table = {r.inode: (r.state, r.port, r.remote) for r in rows}
        listening = {table[i][1] for i in held if i in table and table[i][0] == LISTEN}
        self._way = {
            i: "listen" if table[i][0] == LISTEN else "in" if table[i][1] in listening else "out"
            for i in held
            if i in table and table[i][0] in (ESTABLISHED, LISTEN)
        }
        self._way.update({i: w for i, w in self._pipe_way.items() if w})
        if not self.activity_unavailable:
            mine = [r for r in rows if self._way.get(r.inode) in ("in", "out")]
            mine.sort(key=lambda r: self._way[r.inode] != "out")  # dependencies first
            ids = {
                r.inode: (r.family, r.sid or tcpinfo.socket_id(r.local, r.remote))
                for r in mine[:MAX_LOOKUPS]
            }
            if ids.keys() != self._ids.keys() and ids.keys() - self._activity.keys():
                self._activity_at = -1.0  # the sockets' times are read again for the new ones
            self._ids = ids

    def _table(self, sockets: set[int]) -> list[TcpRow]:
        """The namespace's TCP rows: from one sock_diag dump, which reads every socket's
        times with its row (kept as the latest activity), where netlink can be used; else
        from /proc/PID/net/tcp{,6}."""
        if not self.activity_unavailable:
            try:
                dumped = tcpinfo.dump()
            except OSError as exc:
                self.activity_unavailable = f"sock_diag netlink: {exc.strerror or exc}"
            else:
                self._note(
                    {d.inode: d.activity for d in dumped if d.inode in sockets and d.activity}
                )
                return [_row(d) for d in dumped]
        return tcp_rows(self.pid)

    def _note(self, activity: dict[int, tcpinfo.Activity]) -> None:
        """Keep ``activity`` as the sockets' latest times, and the leads seen at rest and
        awaiting a reply."""
        self._activity_at = time.monotonic()
        self._activity = activity
        for inode, a in activity.items():
            if a.lead is None or a.sent_ms == a.recv_ms:
                continue
            seen = self._rest_lead if a.sent_ms > a.recv_ms else self._await_lead
            seen[inode] = min(a.lead, seen.get(inode, a.lead))

    def of_thread(self, tid: int, syscall_text: str) -> str:
        """:meth:`direction` for a sampler's tick: the descriptors and the TCP table are
        read again at most every ``max_age`` seconds, and a thread blocked in the same call
        as at its last tick gets the same answer without reading anything."""
        nr = syscall_text.split(None, 1)[0] if syscall_text else ""
        if not nr.isdigit() or int(nr) not in self.candidates:
            return ""
        key = (tid, syscall_text)
        if key not in self._seen:
            if time.monotonic() - self._read_at > self.max_age:
                self.refresh()
            self._seen[key] = self._ways_text(self.descriptors(syscall_text))
        seen = self._seen[key]
        if seen != "mixed":
            return seen
        # a loop polling clients and dependencies: which one it waits for changes by the tick
        fds = self.descriptors(syscall_text)
        return "loop" if self._any_awaiting(fds) else "in"

    def _ways_text(self, fds: list[int]) -> str:
        ways = {self._way.get(self._inode_of.get(fd, 0), "") for fd in fds} - {""}
        if not ways:
            return ""
        if ways == {"out"}:
            return "out"
        return "mixed" if "out" in ways and not self.activity_unavailable else "in"

    def _any_awaiting(self, fds: list[int]) -> bool:
        act = self.activity()
        for fd in fds:
            inode = self._inode_of.get(fd, 0)
            if self._way.get(inode) == "out" and self._awaiting(inode, act.get(inode)):
                return True
        return False

    def _awaiting(self, inode: int, a: tcpinfo.Activity | None) -> bool:
        return a is not None and a.awaiting(self._rest_lead.get(inode), self._await_lead.get(inode))

    def activity(self) -> dict[int, tcpinfo.Activity]:
        """The kernel's last-data times of the namespace's sockets, read again at most every
        ACTIVITY_MAX_AGE_S; empty where they cannot be read."""
        if self.activity_unavailable:
            return {}
        if time.monotonic() - self._activity_at > ACTIVITY_MAX_AGE_S:
            try:
                self._note(tcpinfo.lookup(self._ids))
            except OSError as exc:
                self.activity_unavailable = f"sock_diag netlink: {exc.strerror or exc}"
                self._activity = {}
        return self._activity

    def flows(self) -> tuple[int, int] | None:
        """(requests outstanding at dependencies, clients with traffic) now: the process's
        outbound connections awaiting a reply, and its accepted ones that received data in
        the last CLIENT_ACTIVE_MS; None where the kernel's socket times cannot be read."""
        self.refresh()  # a connection made for one call lives less than the reading's period
        act = self.activity()
        if self.activity_unavailable:
            return None
        waiting = clients = 0
        for inode, way in self._way.items():
            a = act.get(inode)
            if a is None:
                continue
            if way == "out" and self._awaiting(inode, a):
                waiting += 1
            elif way == "in" and a.recv_ms <= CLIENT_ACTIVE_MS:
                clients += 1
        return waiting, clients

    def direction(self, syscall_text: str) -> str:
        """'out' when every TCP socket the thread waits on is a connection it made (a
        dependency); 'loop' when it polls its clients too while one of those connections
        awaits a reply; 'in' when one is a connection it accepted or a listening socket and no
        polled dependency is awaited (waiting for its own clients); '' when none is a TCP
        socket, or they cannot be read."""
        fds = self.descriptors(syscall_text)
        way = self._ways_text(fds)
        if way == "mixed":
            return "loop" if self._any_awaiting(fds) else "in"
        return way

    def inodes(self, syscall_text: str) -> list[int]:
        """The socket inodes a thread in ``syscall_text`` waits on."""
        return [i for fd in self.descriptors(syscall_text) if (i := self._inode_of.get(fd, 0)) > 0]

    def descriptors(self, syscall_text: str) -> list[int]:
        """The descriptors a thread blocked in the call ``/proc/TID/syscall`` shows waits
        on: the first argument of a read or write, the polled ones of poll/select/epoll."""
        fields = syscall_text.split()
        if len(fields) < 4 or not fields[0].isdigit():
            return []
        try:
            nr = int(fields[0])
            args = [int(a, 16) for a in fields[1:7]]
        except ValueError:
            return []
        c = self.calls
        if nr in self.io:
            return [args[0]]
        if nr in (c.get("poll"), c.get("ppoll")):
            return self._polled(args[0], args[1])
        if nr in (c.get("select"), c.get("pselect6")):
            return self._selected(args[0], args[1])
        if nr in (c.get("epoll_wait"), c.get("epoll_pwait"), c.get("epoll_pwait2")):
            return _epoll_targets(self.pid, args[0])
        return []

    def _read_mem(self, addr: int, size: int) -> bytes:
        with contextlib.suppress(OSError, OverflowError, ValueError):
            fd = os.open(f"/proc/{self.pid}/mem", os.O_RDONLY | os.O_CLOEXEC)
            try:
                return os.pread(fd, size, addr)
            finally:
                os.close(fd)
        return b""

    def _polled(self, array: int, nfds: int) -> list[int]:
        n = min(nfds, MAX_POLLED)
        raw = self._read_mem(array, 8 * n)  # struct pollfd { int fd; short events, revents; }
        return [
            fd for (fd, _e, _r) in struct.iter_unpack("=ihh", raw[: len(raw) // 8 * 8]) if fd >= 0
        ]

    def _selected(self, nfds: int, readfds: int) -> list[int]:
        if not readfds:
            return []
        n = min(nfds, MAX_POLLED)
        raw = self._read_mem(readfds, (n + 7) // 8)
        return [i for i in range(min(n, len(raw) * 8)) if raw[i // 8] >> (i % 8) & 1]


class TcpRow(NamedTuple):
    """One line of /proc/PID/net/tcp{,6}, or the same socket from a sock_diag dump."""

    inode: int
    state: str
    port: int  # local
    local: str  # ADDR:PORT as the file writes it ('' from a dump)
    remote: str
    family: int
    sid: bytes = b""  # the dump's socket id (b"": made from local and remote)


def _row(d: tcpinfo.Socket) -> TcpRow:
    return TcpRow(d.inode, f"{d.state:02X}", d.port, "", "", d.family, d.sid)


def tcp_rows(pid: int) -> list[TcpRow]:
    """Every TCP socket in ``pid``'s network namespace."""
    out: list[TcpRow] = []
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in read_proc(f"/proc/{pid}/net/{name}").splitlines()[1:]:
            f = line.split()
            if len(f) > 9:
                with contextlib.suppress(ValueError):
                    port = int(f[1].rpartition(":")[2], 16)
                    out.append(TcpRow(int(f[9]), f[3], port, f[1], f[2], family))
    return out


def tcp_table(pid: int) -> dict[int, tuple[str, int, str]]:
    """Inode -> (state, local port, remote address) of every TCP socket in ``pid``'s network
    namespace."""
    return {r.inode: (r.state, r.port, r.remote) for r in tcp_rows(pid)}


def socket_descriptors(pid: int) -> dict[int, int]:
    """Descriptor -> inode of each socket ``pid`` holds (the first MAX_FDS descriptors)."""
    return _descriptors(pid)[0]


def _descriptors(pid: int) -> tuple[dict[int, int], dict[int, int]]:
    """(descriptor -> socket inode, descriptor -> minus the inode of a pipe opened for
    reading) of ``pid``'s first MAX_FDS descriptors."""
    sockets: dict[int, int] = {}
    pipes: dict[int, int] = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return sockets, pipes
    for fd in fds[:MAX_FDS]:
        with contextlib.suppress(OSError, ValueError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                sockets[int(fd)] = int(link[8:-1])
            elif link.startswith("pipe:[") and _access(pid, fd) == os.O_RDONLY:
                pipes[int(fd)] = -int(link[6:-1])
    return sockets, pipes


def _access(pid: int | str, fd: int | str) -> int:
    """O_RDONLY, O_WRONLY or O_RDWR: how ``pid`` opened descriptor ``fd`` (-1 unknown)."""
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/fdinfo/{fd}") as fh:
        for line in fh:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & 3
    return -1


def _pipe_ways(pid: int, pipes: set[int]) -> dict[int, str]:
    """For each pipe (minus its inode) ``pid`` reads: "in" where every process holding it
    for writing is outside ``pid`` and its descendants, else "" (one scan of /proc)."""
    links = {f"pipe:[{-i}]": i for i in pipes}
    writers: dict[int, set[int]] = {i: set() for i in pipes}
    parent: dict[int, int] = {}
    procs = [d for d in os.listdir("/proc") if d.isdigit()][:MAX_PROCS]
    deadline = time.monotonic() + PIPE_SCAN_MAX_S
    for d in procs:
        if time.monotonic() > deadline:
            return dict.fromkeys(pipes, "")
        # a process may end between the listing and the read: "" or a short line
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = read_proc(f"/proc/{d}/stat")
            parent[int(d)] = int(stat[stat.rfind(")") + 2 :].split()[1])
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{d}/fd")[:MAX_FDS]:
                with contextlib.suppress(OSError):
                    inode = links.get(os.readlink(f"/proc/{d}/fd/{fd}"))
                    if inode is not None and _access(d, fd) in (os.O_WRONLY, os.O_RDWR):
                        writers[inode].add(int(d))

    def own(p: int) -> bool:  # pid itself or one of its descendants (unknown: may be)
        for _ in range(64):
            if p == pid:
                return True
            if p not in parent:
                return True
            p = parent[p]
            if p <= 1:
                return False
        return False

    return {i: "in" if w and not any(own(p) for p in w) else "" for i, w in writers.items()}


def _epoll_targets(pid: int, epfd: int) -> list[int]:
    """The descriptors epoll instance ``epfd`` watches (``tfd:`` lines of its fdinfo)."""
    out: list[int] = []
    with contextlib.suppress(OSError), open(f"/proc/{pid}/fdinfo/{epfd}") as fh:
        for line in fh:
            if line.startswith("tfd:"):
                with contextlib.suppress(ValueError, IndexError):
                    out.append(int(line.split()[1]))
            if len(out) >= MAX_POLLED:
                break
    return out
