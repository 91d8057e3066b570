"""The kernel's socket times (collect/tcpinfo.py): when a connection awaits a reply, the
socket ids netlink looks connections up by, and a lookup of this process's own sockets."""

from __future__ import annotations

import os
import socket
import time

import pytest

from diagnose.collect import tcpinfo
from diagnose.collect.sockwait import tcp_rows
from diagnose.collect.tcpinfo import Activity


@pytest.mark.parametrize(
    ("act", "rest", "wait", "awaiting"),
    [
        (Activity(3, 40, True, 1), None, None, True),  # sent after it last received
        (Activity(40, 3, True, 0), None, None, False),  # the reply came last
        # never received: a connection made for one call, its first reply due; one that
        # has sent no data yet; a long-lived one that only sends (a pusher)
        (Activity(3, 40, False, 1), None, None, True),
        (Activity(8, 8, False, 1), None, None, True),
        (Activity(3, 40, False, 0), None, None, False),
        (Activity(3, 60_000, False, 9), None, None, False),
        # one jiffy for a reply and the next request: told by the lead
        (Activity(8, 8, True, 1), None, 1, True),
        (Activity(8, 8, True, 0), None, 1, False),
        (Activity(8, 8, True, 1), 0, None, True),
        (Activity(8, 8, True, 0), 0, None, False),
        # nothing seen at rest or awaiting: one segment each way leaves 0 at rest
        (Activity(8, 8, True, 1), None, None, True),
        (Activity(8, 8, True, 0), None, None, False),
        (Activity(8, 8, True, 1), 1, None, False),  # rest seen at 1: a 2-segment request
        (Activity(8, 8, True, None), 0, 1, False),  # a kernel without segment counts
    ],
)
def test_awaiting(act, rest, wait, awaiting):
    assert act.awaiting(rest, wait) is awaiting


def test_socket_id_of_an_ipv4_connection():
    sid = tcpinfo.socket_id("0100007F:1F90", "0200007F:0050")
    assert sid[:4] == bytes([0x1F, 0x90, 0x00, 0x50])  # ports, network order
    assert sid[4:8] == bytes([127, 0, 0, 1]) and sid[8:20] == b"\0" * 12
    assert sid[20:24] == bytes([127, 0, 0, 2])
    assert len(sid) == 48


def test_a_lookup_of_this_process_s_connection():
    if tcpinfo.unavailable(os.getpid()):
        pytest.skip("sock_diag netlink is not available here")
    with socket.create_server(("127.0.0.1", 0)) as srv:
        out = socket.create_connection(srv.getsockname())
        inbound, _ = srv.accept()
        with out, inbound:
            out.sendall(b"q\n")
            inbound.recv(10)
            time.sleep(0.02)
            inbound.sendall(b"a\n")
            out.recv(10)
            time.sleep(0.02)
            out.sendall(b"q\n")  # outstanding
            row = next(
                r
                for r in tcp_rows(os.getpid())
                if r.port == out.getsockname()[1] and r.state == "01"
            )
            sid = tcpinfo.socket_id(row.local, row.remote)
            got = tcpinfo.lookup({row.inode: (row.family, sid)})
            assert got[row.inode].received and got[row.inode].awaiting()


def test_a_connection_made_for_one_call_awaits_its_first_reply():
    if tcpinfo.unavailable(os.getpid()):
        pytest.skip("sock_diag netlink is not available here")
    with socket.create_server(("127.0.0.1", 0)) as srv:
        out = socket.create_connection(srv.getsockname())
        inbound, _ = srv.accept()
        with out, inbound:
            row = next(
                r
                for r in tcp_rows(os.getpid())
                if r.port == out.getsockname()[1] and r.state == "01"
            )
            sid = {row.inode: (row.family, tcpinfo.socket_id(row.local, row.remote))}
            assert not tcpinfo.lookup(sid)[row.inode].awaiting()  # nothing asked yet
            out.sendall(b"q\n")  # the request; no byte has come back
            time.sleep(0.02)
            got = tcpinfo.lookup(sid)[row.inode]
            assert not got.received and got.awaiting()
            inbound.sendall(b"a\n")
            out.recv(10)
            time.sleep(0.02)
            assert not tcpinfo.lookup(sid)[row.inode].awaiting()  # answered


def test_a_dump_reads_each_held_connection_with_its_times_and_no_time_wait_row():
    if tcpinfo.unavailable(os.getpid()):
        pytest.skip("sock_diag netlink is not available here")
    with socket.create_server(("127.0.0.1", 0)) as srv:
        # GIVEN a connection closed by its maker (its end waits in TIME_WAIT) ...
        gone = socket.create_connection(srv.getsockname())
        gone_port = gone.getsockname()[1]
        other_end, _ = srv.accept()
        gone.close()  # closed first: this end waits
        time.sleep(0.02)
        other_end.close()
        # ... and one open, a request outstanding on it
        out = socket.create_connection(srv.getsockname())
        inbound, _ = srv.accept()
        with out, inbound:
            out.sendall(b"q\n")
            time.sleep(0.02)
            table = {(r.port, r.state) for r in tcp_rows(os.getpid())}
            assert (gone_port, "06") in table  # /proc/net/tcp lists the TIME_WAIT row
            dumped = tcpinfo.dump()
            # THEN the dump holds the open one, its state, and its times read with it
            port = out.getsockname()[1]
            mine = [d for d in dumped if d.port == port]
            assert len(mine) == 1 and mine[0].state == 1, mine
            assert mine[0].inode == os.fstat(out.fileno()).st_ino
            assert mine[0].activity is not None and mine[0].activity.awaiting()
            # and no TIME_WAIT row; its socket id serves an exact lookup
            assert not [d for d in dumped if d.port == gone_port], dumped
            got = tcpinfo.lookup({mine[0].inode: (mine[0].family, mine[0].sid)})
            assert got[mine[0].inode].awaiting()
