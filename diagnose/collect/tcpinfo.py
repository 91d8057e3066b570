"""When each TCP socket last sent and received data, from the kernel (``tcp_info`` over
sock_diag netlink, what ``ss -ti`` prints as ``lastsnd``/``lastrcv``).

A connection the process made that sent data more recently than it received any is
awaiting its reply: a request outstanding at a dependency. A connection it accepted that
received data within the last second is a client with traffic. Both are counted from the
kernel's socket state, whatever the code's names; nothing here touches the target.

The kernel keeps these times in jiffies (1-4 ms): a connection used back to back (a reply
received and the next request sent within one jiffy, a pool's busy connection) shows the
two at the same time. Its data segments tell them apart: a request is outstanding while the
connection's lead (segments sent less those received) is above the one it has at rest, or
the one it has when seen awaiting a reply (:meth:`Activity.awaiting`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300  # NLM_F_ROOT | NLM_F_MATCH: every socket the request's filter matches
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_INFO = 2
#: TCP states a lookup matches (bit = 1 << state): any
_STATES = 0xFFF
#: TCP states a dump asks for: all but TIME_WAIT (6), whose rows no process holds and which
#: a busy host (or a test suite) leaves by the thousand
HELD_STATES = _STATES & ~(1 << 6)
#: rows one dump reads, at most (a host with more is cut short: its later sockets unseen)
MAX_DUMP_ROWS = 65536
#: offsets in struct tcp_info (include/uapi/linux/tcp.h): last_data_sent, last_data_recv
#: (u32, ms ago), bytes_received (u64, kernel 4.1+), data_segs_in, data_segs_out (u32, 4.6+)
_LAST_SENT, _LAST_RECV, _BYTES_RECEIVED, _SEGS_IN = 44, 52, 128, 152
_HEADER = struct.Struct("=IHHII")
_MSG = struct.Struct("=BBBB")  # family, state, timer, retrans; then the socket id
_TAIL = struct.Struct("=IIIII")  # expires, rqueue, wqueue, uid, inode
_ID_SIZE = 48
#: a connection that never received a byte awaits its first reply for at most this long
#: since it was set up (longer: it only sends)
FIRST_REPLY_MS = 10_000


@dataclass(frozen=True)
class Socket:
    """One TCP socket as a sock_diag dump reports it: the row /proc/net/tcp would show and
    its last-data times, read by the kernel at the same instant."""

    inode: int
    family: int
    state: int
    port: int  # local
    sid: bytes  # struct inet_diag_sockid, what an exact lookup of it asks for
    activity: Activity | None


@dataclass(frozen=True)
class Activity:
    """One socket's last data: milliseconds since it sent, since it received, and whether it
    ever received a byte (a connection that only sends, a log or metrics pusher, never
    awaits a reply)."""

    sent_ms: int
    recv_ms: int
    received: bool
    lead: int | None = None  # data segments sent less those received (None: kernel < 4.6)

    def awaiting(self, rest_lead: int | None = None, await_lead: int | None = None) -> bool:
        """A reply is due: on a young connection that has received nothing yet, it sent a
        request; on one that does receive, it sent after it last received, or both in one
        jiffy (a reply, then at once the next request) while its lead is above the one it
        had at rest (``rest_lead``, the least seen), else at least the one it had awaiting
        a reply (``await_lead``), else above 0."""
        if not self.received:
            # a connection made for one call, its first reply due: the kernel counts its
            # receive time from the set-up, so it sent then or since; a long-lived one that
            # only sends (a log or metrics pusher) is older than any first reply
            return self.sent_ms <= self.recv_ms < FIRST_REPLY_MS and (self.lead or 0) > 0
        if self.sent_ms > self.recv_ms:
            return False
        if self.sent_ms < self.recv_ms:
            return True
        if self.lead is None:
            return False
        if rest_lead is not None:
            return self.lead > rest_lead
        if await_lead is not None:
            return self.lead >= await_lead
        # neither seen (a connection used back to back is never seen otherwise): a client's
        # connection that sends one segment a request and receives one a reply is at 0 at rest
        return self.lead > 0


def same_netns(pid: int) -> bool:
    """Whether ``pid`` shares diagnose's network namespace (netlink sees only ours)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return False


def unavailable(pid: int) -> str:
    """Why ``tcp_info`` cannot be read for ``pid``'s sockets, or '' when it can."""
    if not same_netns(pid):
        return "the target is in another network namespace"
    try:
        with _netlink():
            pass
    except OSError as exc:
        return f"sock_diag netlink: {exc.strerror or exc}"
    return ""


def socket_id(local: str, remote: str) -> bytes:
    """struct inet_diag_sockid of a connection as /proc/net/tcp{,6} writes its ends
    (``ADDR:PORT``, the address as the kernel's 32-bit words in hex, host order)."""
    (la, lp), (ra, rp) = (x.split(":") for x in (local, remote))
    return (
        struct.pack("!HH", int(lp, 16), int(rp, 16))
        + _address(la).ljust(16, b"\0")
        + _address(ra).ljust(16, b"\0")
        + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)  # any interface, no cookie
    )


def _address(hexed: str) -> bytes:
    raw = bytes.fromhex(hexed)
    return b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))


def _netlink() -> socket.socket:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    s.settimeout(1.0)
    return s


def lookup(ids: Mapping[int, tuple[int, bytes]]) -> dict[int, Activity]:
    """Socket inode -> :class:`Activity`, for each (family, socket id) asked, one exact
    lookup each (a dump would walk every socket of the host: 2.5 ms a time here, against
    7 us a lookup). Sockets gone meanwhile are left out; raises OSError where netlink
    refuses."""
    out: dict[int, Activity] = {}
    with _netlink() as s:
        for inode, (family, sid) in ids.items():
            req = struct.pack(
                "=BBBxI", family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), _STATES
            )
            req += sid
            s.send(
                _HEADER.pack(_HEADER.size + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
                + req
            )
            got: list[Socket] = []
            with contextlib.suppress(OSError):  # ENOENT: it closed since /proc/net/tcp was read
                _parse(s.recv(1 << 14), got)
            if got and got[0].activity is not None:
                out[inode] = got[0].activity
    return out


def dump(states: int = HELD_STATES) -> list[Socket]:
    """Every TCP socket of diagnose's network namespace in ``states`` (bit = 1 << state),
    with its times: one walk of the kernel's tables, so a connection made for one call is
    read with its times before it can close (docs/performance.md has the figures). Raises
    OSError where netlink refuses."""
    out: list[Socket] = []
    with _netlink() as s:
        for family in (socket.AF_INET, socket.AF_INET6):
            req = struct.pack(
                "=BBBxI", family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), states
            )
            req += b"\0" * _ID_SIZE
            s.send(
                _HEADER.pack(
                    _HEADER.size + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0
                )
                + req
            )
            while _parse(s.recv(1 << 16), out) and len(out) < MAX_DUMP_ROWS:
                pass
            if len(out) >= MAX_DUMP_ROWS:
                break  # the socket's close drops the rest of the dump
    return out


def _parse(data: bytes, out: list[Socket]) -> bool:
    """Add one netlink reply's sockets to ``out``; False at its end (NLMSG_DONE)."""
    off = 0
    while off + _HEADER.size <= len(data):
        length, kind = _HEADER.unpack_from(data, off)[:2]
        if kind == NLMSG_DONE or length < _HEADER.size:
            return False
        if kind == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", data, off + _HEADER.size)
            raise OSError(-err, os.strerror(-err) if err else "netlink error")
        body = data[off + _HEADER.size : off + length]
        with contextlib.suppress(struct.error):
            family, state = _MSG.unpack_from(body)[:2]
            sid = body[_MSG.size : _MSG.size + _ID_SIZE]
            (port,) = struct.unpack_from("!H", sid)
            inode = _TAIL.unpack_from(body, _MSG.size + _ID_SIZE)[4]
            info = _attribute(body, _MSG.size + _ID_SIZE + _TAIL.size, INET_DIAG_INFO)
            activity = None
            if info is not None and len(info) >= _LAST_RECV + 4:
                sent, recv = (
                    struct.unpack_from("=I", info, _LAST_SENT)[0],
                    struct.unpack_from("=I", info, _LAST_RECV)[0],
                )
                got = (
                    struct.unpack_from("=Q", info, _BYTES_RECEIVED)[0] > 0
                    if len(info) >= _BYTES_RECEIVED + 8
                    else True
                )
                lead = None
                if len(info) >= _SEGS_IN + 8:
                    segs_in, segs_out = struct.unpack_from("=II", info, _SEGS_IN)
                    lead = segs_out - segs_in
                activity = Activity(sent, recv, got, lead)
            if len(sid) == _ID_SIZE:
                out.append(Socket(inode, family, state, port, sid, activity))
        off += (length + 3) & ~3
    return True


def _attribute(body: bytes, off: int, kind: int) -> bytes | None:
    """The payload of the first netlink attribute of ``kind`` from ``off``."""
    while off + 4 <= len(body):
        length, atype = struct.unpack_from("=HH", body, off)
        if length < 4:
            return None
        if atype == kind:
            return body[off + 4 : off + length]
        off += (length + 3) & ~3
    return None
