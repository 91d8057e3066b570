"""System call numbers by architecture, and what a thread blocked in each waits for.

Read from ``/proc/TID/syscall`` by the collectors (which descriptors a blocked thread waits
on) and the analysis (what it waits for). The numbers differ between architectures (futex
is 202 on x86_64, 98 on aarch64).
"""

from __future__ import annotations

from collections.abc import Mapping

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
