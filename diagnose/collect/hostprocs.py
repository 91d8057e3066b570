"""Who else uses the CPUs: every process's CPU time, every few seconds, with its relation to
the target. Written by the /proc sampler to ``proc/host.csv``.

A run-queue wait caused by other processes means different things by who they are:

- ``client``: the process holds a TCP connection to a port the target listens on (a load
  generator such as locust or wrk on the same host, a reverse proxy). In production the
  clients are elsewhere: the wait they cause is the test set-up's, not the service's.
- ``service``: the process holds one of the target's listening sockets itself (the other
  workers of a pre-fork server, its master), or target selection found it to be one of the
  service's processes (a pipeline's other stages, the wrapper the user gave): the service
  competing with itself.
- ``other``: a neighbour (another service, a batch job, a log shipper).

The first scan writes every process; later scans only those whose CPU time moved, so the
file grows with activity, not with the host's process count. A process's relation is read
once, when it first uses CPU (its sockets: ``/proc/PID/fd`` against its ``net/tcp``).
Cost measured here: a scan of 72 processes took 2.7 ms (median of 20, beside two test
suites), every 2 s: about 0.15% of a core.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

from diagnose.collect.procfs import CLK_TCK, parse_stat
from diagnose.collect.proctree import listening_sockets, socket_inodes

HOST_COLUMNS = ["t", "pid", "comm", "cpu_s", "role"]
#: seconds between scans (the first and the last scan bound the measured span)
HOST_SCAN_EVERY_S = 2.0
ROLES = ("client", "service", "other")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _tcp_ports(hex_addr: str) -> int:
    return int(hex_addr.rpartition(":")[2], 16)


def connected_to(pid: int, ports: set[int]) -> bool:
    """``pid`` holds an established TCP connection whose remote port is one of ``ports``."""
    if not ports:
        return False
    remote: dict[int, int] = {}  # inode -> remote port of established connections
    for name in ("tcp", "tcp6"):
        for line in (_read(f"/proc/{pid}/net/{name}") or "").splitlines()[1:]:
            f = line.split()
            if len(f) > 9 and f[3] == "01":  # TCP_ESTABLISHED
                with contextlib.suppress(ValueError):
                    remote[int(f[9])] = _tcp_ports(f[2])
    if not remote:
        return False
    return any(remote.get(inode) in ports for inode in socket_inodes(pid))


class HostScan:
    """Scans of every process's CPU time; ``rows`` of one scan for ``proc/host.csv``."""

    def __init__(self, target: int, service: Iterable[int] = ()) -> None:
        self.target = target
        own = socket_inodes(target)  # the namespace's listening sockets that are its own
        listening = {
            i: addr
            for i, addr in listening_sockets(target).items()
            if i in own and not addr.startswith("unix:")
        }
        self.listen_inodes = set(listening)
        self.ports = {
            int(port)
            for port in (a.rpartition(":")[2] for a in listening.values())
            if port.isdigit()
        }
        self.last: dict[int, float] = {}
        # processes that listen on nothing are the service's too when selection said so
        self.roles: dict[int, str] = dict.fromkeys(service, "service")
        self.scans = 0

    def role(self, pid: int) -> str:
        if pid not in self.roles and not self.listen_inodes:
            self.roles[pid] = "other"  # a target that serves no port has no clients
        if pid not in self.roles:
            sockets = socket_inodes(pid)
            if sockets & self.listen_inodes:
                self.roles[pid] = "service"
            elif sockets and connected_to(pid, self.ports):
                self.roles[pid] = "client"
            else:
                self.roles[pid] = "other"
        return self.roles[pid]

    def scan(self, t: float, exclude: Iterable[int]) -> list[list[object]]:
        """One scan: a row per process whose CPU time moved (every process, the first time);
        the target and ``exclude`` (diagnose and its helpers) are measured elsewhere."""
        skip = {self.target, *exclude}
        rows: list[list[object]] = []
        seen: dict[int, float] = {}
        for name in _pids():
            pid = int(name)
            if pid in skip:
                continue
            text = _read(f"/proc/{pid}/stat")
            if text is None:
                continue
            try:
                st = parse_stat(text)
            except ValueError:
                continue
            cpu = round((st.utime + st.stime) / CLK_TCK, 2)
            seen[pid] = cpu
            if self.scans == 0 or cpu != self.last.get(pid):
                role = self.role(pid) if self.scans and cpu > 0 else self.roles.get(pid, "")
                rows.append([t, pid, st.comm, cpu, role])
        self.last = seen
        self.scans += 1
        return rows


def _pids() -> list[str]:
    try:
        return [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []
