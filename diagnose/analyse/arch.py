"""What the analysis needs to know about the machine a bundle was recorded on.

/proc/TID/syscall gives the number of the system call a blocked thread is in, and system
call numbers differ between architectures (futex is 202 on x86_64, 98 on aarch64). The
table is chosen by the machine the bundle *recorded* (``system.json`` ``host.machine``, else
the manifest's ``host.machine``), never by the host that analyses it, so a bundle gives the
same verdict wherever it is analysed. A bundle that recorded no machine (its system
collector failed, and it predates the manifest field) is read as x86_64; a recorded
machine without a table here gets an empty one: its blocked threads are classified by
state and Python frame only, never by numbers of another architecture.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: x86_64 (arch/x86/entry/syscalls/syscall_64.tbl), the calls the classifier uses.
SYSCALLS_X86_64: Mapping[str, int] = {
    "read": 0, "write": 1, "poll": 7, "pread64": 17, "pwrite64": 18, "readv": 19,
    "writev": 20, "select": 23, "nanosleep": 35, "connect": 42, "accept": 43, "sendto": 44,
    "recvfrom": 45, "sendmsg": 46, "recvmsg": 47, "wait4": 61, "futex": 202,
    "clock_nanosleep": 230, "epoll_wait": 232, "waitid": 247, "pselect6": 270, "ppoll": 271,
    "epoll_pwait": 281, "accept4": 288, "recvmmsg": 299, "sendmmsg": 307,
    "epoll_pwait2": 441, "futex_waitv": 449, "futex_wait": 455,
}  # fmt: skip
#: aarch64 (include/uapi/asm-generic/unistd.h): no poll, select or epoll_wait there.
SYSCALLS_AARCH64: Mapping[str, int] = {
    "epoll_pwait": 22, "read": 63, "write": 64, "readv": 65, "writev": 66, "pread64": 67,
    "pwrite64": 68, "pselect6": 72, "ppoll": 73, "waitid": 95, "futex": 98,
    "nanosleep": 101, "clock_nanosleep": 115, "accept": 202, "connect": 203, "sendto": 206,
    "recvfrom": 207, "sendmsg": 211, "recvmsg": 212, "accept4": 242, "recvmmsg": 243,
    "wait4": 260, "sendmmsg": 269, "epoll_pwait2": 441, "futex_waitv": 449, "futex_wait": 455,
}  # fmt: skip
TABLES: Mapping[str, Mapping[str, int]] = {
    "x86_64": SYSCALLS_X86_64,
    "amd64": SYSCALLS_X86_64,
    "aarch64": SYSCALLS_AARCH64,
    "arm64": SYSCALLS_AARCH64,
}
#: The machine a bundle that recorded none is read as.
DEFAULT_MACHINE = "x86_64"


#: What a thread blocked in each call waits for (names as in the tables above).
FUTEX_CALLS = ("futex", "futex_wait", "futex_waitv")
IO_CALLS = ("read", "write", "pread64", "pwrite64", "readv", "writev", "connect", "sendto",
            "recvfrom", "sendmsg", "recvmsg", "recvmmsg", "sendmmsg")  # fmt: skip
POLL_CALLS = ("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2")
ACCEPT_CALLS = ("accept", "accept4")
SLEEP_CALLS = ("nanosleep", "clock_nanosleep", "wait4", "waitid")


@dataclass(frozen=True)
class Syscalls:
    """The system call numbers of one architecture, by what a blocked thread waits for."""

    machine: str
    futex: frozenset[int]
    io: frozenset[int]  # reads and writes of files, sockets, pipes
    poll: frozenset[int]
    accept: frozenset[int]
    sleep: frozenset[int]  # sleeps and waits for a child

    @classmethod
    def of(cls, machine: str) -> Syscalls:
        table = TABLES.get(machine, {})

        def nrs(names: tuple[str, ...]) -> frozenset[int]:
            return frozenset(table[n] for n in names if n in table)

        return cls(
            machine,
            nrs(FUTEX_CALLS),
            nrs(IO_CALLS),
            nrs(POLL_CALLS),
            nrs(ACCEPT_CALLS),
            nrs(SLEEP_CALLS),
        )


def recorded_machine(system: Mapping[str, Any], manifest_host: Mapping[str, Any]) -> str:
    """The machine the bundle was recorded on (``uname -m``), or DEFAULT_MACHINE."""
    for host in (system.get("host"), manifest_host):
        machine = host.get("machine") if isinstance(host, Mapping) else None
        if isinstance(machine, str) and machine:
            return machine
    return DEFAULT_MACHINE
