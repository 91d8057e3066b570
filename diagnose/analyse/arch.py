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

from diagnose.formats.syscalls import (  # noqa: F401  (re-exported for the analysis)
    ACCEPT_CALLS,
    DEFAULT_MACHINE,
    FUTEX_CALLS,
    IO_CALLS,
    POLL_CALLS,
    SLEEP_CALLS,
    SYSCALLS_AARCH64,
    SYSCALLS_X86_64,
    TABLES,
)


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
